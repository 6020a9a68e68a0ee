package idemtest_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idemtest"
)

const crashLease = 10 * time.Second

// crashPoint is where an invocation dies, on one path, and what its Store
// called before it died.
type crashPoint struct {
	name    string
	atomic  bool // DoAtomic, else Do
	writes  bool // the work adds a business write
	fault   *idemtest.Fault
	inWork  bool // the work calls Crash, after its outside effect
	landed  bool // the commit landed before the death
	calls   map[idemtest.Op]int
	lastRun int // the runs of the work by then
}

func crashPoints() []crashPoint {
	put, twi := idemtest.PutItem, idemtest.TransactWriteItems
	return []crashPoint{
		{name: "Do/before the work", writes: true, fault: &idemtest.Fault{Op: put, Kind: idemtest.CrashAfter}, calls: map[idemtest.Op]int{put: 1}},
		{name: "Do/during the work", writes: true, inWork: true, calls: map[idemtest.Op]int{put: 1}, lastRun: 1},
		{name: "Do/commit sent, not landed", writes: true, fault: &idemtest.Fault{Op: twi, Kind: idemtest.CrashBefore}, calls: map[idemtest.Op]int{put: 1, twi: 1}, lastRun: 1},
		{name: "Do/commit landed, answer lost", writes: true, fault: &idemtest.Fault{Op: twi, Kind: idemtest.CrashAfter}, landed: true, calls: map[idemtest.Op]int{put: 1, twi: 1}, lastRun: 1},
		{name: "Do/no writes, commit sent, not landed", fault: &idemtest.Fault{Op: put, Nth: 2, Kind: idemtest.CrashBefore}, calls: map[idemtest.Op]int{put: 2}, lastRun: 1},
		{name: "Do/no writes, commit landed, answer lost", fault: &idemtest.Fault{Op: put, Nth: 2, Kind: idemtest.CrashAfter}, landed: true, calls: map[idemtest.Op]int{put: 2}, lastRun: 1},
		{name: "DoAtomic/during the work", atomic: true, writes: true, inWork: true, calls: map[idemtest.Op]int{}, lastRun: 1},
		{name: "DoAtomic/commit sent, not landed", atomic: true, writes: true, fault: &idemtest.Fault{Op: twi, Kind: idemtest.CrashBefore}, calls: map[idemtest.Op]int{twi: 1}, lastRun: 1},
		{name: "DoAtomic/commit landed, answer lost", atomic: true, writes: true, fault: &idemtest.Fault{Op: twi, Kind: idemtest.CrashAfter}, landed: true, calls: map[idemtest.Op]int{twi: 1}, lastRun: 1},
		{name: "DoAtomic/no writes, commit sent, not landed", atomic: true, fault: &idemtest.Fault{Op: put, Kind: idemtest.CrashBefore}, calls: map[idemtest.Op]int{put: 1}, lastRun: 1},
		{name: "DoAtomic/no writes, commit landed, answer lost", atomic: true, fault: &idemtest.Fault{Op: put, Kind: idemtest.CrashAfter}, landed: true, calls: map[idemtest.Op]int{put: 1}, lastRun: 1},
	}
}

// A crashed invocation leaves what a killed process leaves: no lapse, no
// hand-back, no settle, only the calls made before the death. Under Do the
// lease stays live until it runs out, then a retry takes over and runs the
// work again; a commit that landed is replayed. Either way the work takes
// effect once.
func TestACrashedInvocationIsTakenOverAfterItsLeaseAndTakesEffectOnce(t *testing.T) {
	for _, p := range crashPoints() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			s := idemtest.NewStore(t, func(o *idem.Options) { o.Lease = crashLease })
			orders := ordersTable(t, s.Client)
			runs, do := 0, s.Do
			if p.atomic {
				do = s.DoAtomic
			}
			req := idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"}
			work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				runs++ // the work's outside effect, were it to have one
				if p.inWork && runs == 1 {
					idemtest.Crash(ctx)
				}
				if p.writes {
					tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(orders), ConditionExpression: aws.String("attribute_not_exists(id)"),
						Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "o1"}}}}, nil)
				}
				return idem.Response{StatusCode: 201}, nil
			}
			if p.fault != nil {
				s.Faults.Inject(*p.fault)
			}
			returned := false
			if !idemtest.Invoke(context.Background(), func(ctx context.Context) { _, _ = do(ctx, req, work); returned = true }) || returned {
				t.Fatalf("the invocation did not crash (returned: %v)", returned)
			}
			for _, op := range []idemtest.Op{idemtest.PutItem, idemtest.GetItem, idemtest.UpdateItem, idemtest.TransactWriteItems} {
				if got := s.Faults.Calls(op); got != p.calls[op] {
					t.Errorf("the crashed invocation made %d %s calls, want %d: a killed process lapses, hands back and settles nothing", got, op, p.calls[op])
				}
			}
			if runs != p.lastRun {
				t.Errorf("the work ran %d times before the crash, want %d", runs, p.lastRun)
			}
			retryAfterCrash(t, s, p, func() (idem.Result, error) { return do(context.Background(), req, work) })
			if again, err := do(context.Background(), req, work); err != nil || !again.Replayed {
				t.Errorf("the next retry: %+v, %v; want the committed response replayed", again, err)
			}
			if n := s.Faults.Commits(); n != 1 {
				t.Errorf("%d commits, want 1", n)
			}
		})
	}
}

// retryAfterCrash: the request's retry, once the crash left the key where
// it left it, comes to one commit.
func retryAfterCrash(t *testing.T, s *idemtest.Store, p crashPoint, retry func() (idem.Result, error)) {
	t.Helper()
	rec, err := s.Inspect(context.Background(), "alice", "order-1")
	switch {
	case p.landed:
		if err != nil || rec.Status != "COMPLETED" {
			t.Fatalf("after a crash once the commit landed: %+v, %v; want the record completed", rec, err)
		}
	case p.atomic:
		if !errors.Is(err, idem.ErrNoRecord) {
			t.Fatalf("after DoAtomic crashed before its commit landed: %+v, %v; want no record", rec, err)
		}
	default:
		if err != nil || rec.LeaseLeft(s.Clock.Now()) <= 0 {
			t.Fatalf("after Do crashed before its commit landed: %+v, %v; want the lease still live", rec, err)
		}
		var busy *idem.InProgressError
		if _, err := retry(); !errors.As(err, &busy) {
			t.Fatalf("a retry within the lease: %v, want an *InProgressError", err)
		}
		s.Clock.Advance(crashLease)
	}
	res, err := retry()
	if err != nil || res.Response.StatusCode != 201 || res.Replayed != p.landed {
		t.Fatalf("the retry: %+v, %v; want 201, replayed only if the commit had landed (%v)", res, err, p.landed)
	}
}

// A panic is not a crash: the process lives on, and pkg/idem lapses the
// lease at once, which a crash must not look like.
func TestAPanicUnderInvokeIsNoCrashAndLapsesTheLease(t *testing.T) {
	s := idemtest.NewStore(t)
	req := idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"}
	var got any
	func() {
		defer func() { got = recover() }()
		idemtest.Invoke(context.Background(), func(ctx context.Context) {
			_, _ = s.Do(ctx, req, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) { panic("the card was declined oddly") }) // it panics: no answer
		})
	}()
	if msg, _ := got.(string); !strings.Contains(msg, "the card was declined oddly") || !strings.Contains(msg, "crash_test.go") {
		t.Fatalf("Invoke panicked with %v; want the work's panic, with its stack", got)
	}
	if n := s.Faults.Calls(idemtest.UpdateItem); n != 1 {
		t.Fatalf("%d UpdateItem after a panic, want the lapse", n)
	}
	res, err := s.Do(context.Background(), req, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 201}, nil
	})
	if err != nil || res.Response.StatusCode != 201 {
		t.Fatalf("the retry after a panic: %+v, %v; want it to take over at once", res, err)
	}
}

// A crash through a door: the SQS handler never returns, so the batch is
// delivered again; the message is in progress (a batch item failure)
// until the lease runs out, then processed once.
func TestACrashedSQSInvocationIsRedeliveredAndProcessedOnce(t *testing.T) {
	s := idemtest.NewStore(t, func(o *idem.Options) { o.Lease = crashLease })
	runs := 0
	handle := idemlambda.SQS(s.Store, func(ctx context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error {
		if runs++; runs == 1 {
			idemtest.Crash(ctx)
		}
		return nil
	}, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = "counter" })
	batch := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", Body: `{"order":"o1"}`}}}
	if !idemtest.Invoke(context.Background(), func(ctx context.Context) { _, _ = handle(ctx, batch) }) {
		t.Fatal("the invocation did not crash")
	}
	if n := s.Faults.Calls(idemtest.UpdateItem); n != 0 {
		t.Fatalf("%d UpdateItem: the crash lapsed the lease", n)
	}
	resp, err := handle(context.Background(), batch)
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("redelivered within the lease: %+v, %v; want the message failed, to come back", resp, err)
	}
	s.Clock.Advance(crashLease)
	for range 2 {
		if resp, err := handle(context.Background(), batch); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("redelivered after the lease: %+v, %v; want it processed", resp, err)
		}
	}
	if runs != 2 || s.Faults.Commits() != 1 {
		t.Fatalf("the handler ran %d times and committed %d; want the crashed run and one more, committed once", runs, s.Faults.Commits())
	}
}

// A call the dead invocation makes (its own deferred code, here) is not
// made, ends that code, and fails the test: a killed process makes none.
func TestACallAfterTheCrashFailsTheTest(t *testing.T) {
	db := idemtest.Client(t)
	rec := &recorder{TB: t}
	faults := idemtest.NewFaults(rec, db)
	store, err := idem.New(faults, idemtest.Table(t, db))
	if err != nil {
		t.Fatal(err)
	}
	returned := false
	crashed := idemtest.Invoke(context.Background(), func(ctx context.Context) {
		defer func() { // runs as the goroutine ends, as a killed process's would not
			_, _ = store.Do(ctx, idem.Request{Scope: "alice", Key: "k2", Fingerprint: "v1"}, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) { // it never returns: a dead invocation's call ends its code
				return idem.Response{StatusCode: 201}, nil
			})
			returned = true
		}()
		idemtest.Crash(ctx)
	})
	errs := rec.end()
	if !crashed || returned || len(errs) != 1 || !strings.Contains(errs[0], "an invocation that crashed made a PutItem call") {
		t.Fatalf("crashed %v, the late Do returned %v, reports %q; want the call not made, its code ended, and one report", crashed, returned, errs)
	}
	if _, err := store.Inspect(context.Background(), "alice", "k2"); !errors.Is(err, idem.ErrNoRecord) {
		t.Fatalf("the dead invocation's claim: %v, want no record", err)
	}
}

// A crash fault that meets a call outside Invoke has no invocation to
// kill: it says so, and lets the call through.
func TestACrashOutsideInvokeFailsTheTestAndLetsTheCallThrough(t *testing.T) {
	db := idemtest.Client(t)
	rec := &recorder{TB: t}
	faults := idemtest.NewFaults(rec, db)
	store, err := idem.New(faults, idemtest.Table(t, db))
	if err != nil {
		t.Fatal(err)
	}
	faults.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.CrashAfter})
	res, err := store.Do(context.Background(), idem.Request{Scope: "alice", Key: "k1", Fingerprint: "v1"}, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 201}, nil
	})
	errs := rec.end()
	if err != nil || res.Response.StatusCode != 201 || len(errs) != 1 || !strings.Contains(errs[0], "outside Invoke") {
		t.Fatalf("Do: %+v, %v; reports %q; want the call let through and the fault reported", res, err, errs)
	}
	defer func() {
		if recover() == nil {
			t.Error("Crash outside Invoke did not panic")
		}
	}()
	idemtest.Crash(context.Background())
}

// fn's own end of its goroutine (t.FailNow's) is no crash: Invoke ends
// its caller's goroutine in turn.
func TestInvokeEndsItsCallerWhenFnEndsItsOwnGoroutine(t *testing.T) {
	returned, ended := false, make(chan struct{})
	go func() {
		defer close(ended)
		idemtest.Invoke(context.Background(), func(context.Context) { runtime.Goexit() })
		returned = true
	}()
	<-ended
	if returned {
		t.Fatal("Invoke returned after fn ended its goroutine by itself")
	}
}
