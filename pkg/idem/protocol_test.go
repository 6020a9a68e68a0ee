package idem_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// createOrder is the work used throughout: one business write and a 201.
func (f *fixture) createOrder(scope, id string, runs *atomic.Int32) idem.Work {
	return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		if runs != nil {
			runs.Add(1)
		}
		tx.Add(f.OrderPut(scope, id, "first"), nil)
		return idem.Response{
			StatusCode: 201,
			Header:     map[string]string{"Content-Type": "application/json", "Location": "/orders/" + id},
			Body:       []byte(`{"order_id":"` + id + `"}`),
		}, nil
	}
}

func TestFirstCallRunsWorkAndCommitsInTwoCalls(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	res, err := f.Store.Do(context.Background(), req("alice", "k1", `{"a":1}`), f.createOrder("alice", "o1", &runs))
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed || res.Response.StatusCode != 201 || runs.Load() != 1 {
		t.Fatalf("got %+v after %d runs, want a fresh 201 after 1", res, runs.Load())
	}
	if got := f.DB.Total(); got != 2 || f.DB.Get("PutItem") != 1 || f.DB.Get("TransactWriteItems") != 1 {
		t.Fatalf("calls = %v, want exactly PutItem and TransactWriteItems", f.DB.Calls())
	}
	if f.Order("alice", "o1") == nil {
		t.Fatal("business write missing after commit")
	}
	rec := f.Record("alice", "k1")
	if str(rec, "status") != "COMPLETED" || str(rec, "scope") != "alice" || str(rec, "key") != "k1" {
		t.Fatalf("record = %v, want COMPLETED with readable scope and key", rec)
	}
}

func TestReplayReturnsStoredResponse(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	first, err := f.Store.Do(context.Background(), req("alice", "k1", `{"a":1,"b":[1,2]}`), f.createOrder("alice", "o1", &runs))
	if err != nil {
		t.Fatal(err)
	}
	f.DB.Reset()
	// Same request with other white space and member order: the same.
	again, err := f.NewStore().Do(context.Background(), req("alice", "k1", "{ \"b\": [1, 2],\n \"a\": 1 }"), f.createOrder("alice", "o1", &runs))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || runs.Load() != 1 {
		t.Fatalf("replayed=%v runs=%d, want a replay without running the work", again.Replayed, runs.Load())
	}
	if again.Response.StatusCode != first.Response.StatusCode || string(again.Response.Body) != string(first.Response.Body) ||
		again.Response.Header["Location"] != "/orders/o1" || again.Response.Header["Content-Type"] != "application/json" {
		t.Fatalf("replay %+v differs from first response %+v", again.Response, first.Response)
	}
	if got := f.DB.Total(); got != 1 || f.DB.Get("PutItem") != 1 {
		t.Fatalf("replay calls = %v, want exactly one PutItem and no read", f.DB.Calls())
	}
}

func TestSameKeyDifferentRequestIsRefused(t *testing.T) {
	for _, completed := range []bool{true, false} {
		t.Run(fmt.Sprintf("completed=%v", completed), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if completed {
				if _, err := f.Store.Do(ctx, req("alice", "k1", `{"amount":100}`), f.createOrder("alice", "o1", nil)); err != nil {
					t.Fatal(err)
				}
			} else {
				release := holdKey(t, f.Store, req("alice", "k1", `{"amount":100}`))
				defer release()
			}
			var runs atomic.Int32
			_, err := f.NewStore().Do(ctx, req("alice", "k1", `{"amount":999}`), f.createOrder("alice", "o2", &runs))
			if !errors.Is(err, idem.ErrFingerprintMismatch) {
				t.Fatalf("err = %v, want ErrFingerprintMismatch", err)
			}
			if runs.Load() != 0 || f.Order("alice", "o2") != nil {
				t.Fatal("the mismatched request ran or wrote")
			}
		})
	}
}

// holdKey starts an operation on req whose work blocks until the returned
// function is called, and returns once the key is claimed.
func holdKey(t *testing.T, s *idem.Store, r idem.Request) (release func()) {
	t.Helper()
	claimed, proceed, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.Do(context.Background(), r, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) { // the holder's own answer is not what its callers test
			close(claimed)
			<-proceed
			return idem.Response{StatusCode: 200, Body: []byte("held")}, nil
		})
	}()
	select {
	case <-claimed:
	case <-done:
		t.Fatal("holder did not get the claim")
	}
	return func() { close(proceed); <-done }
}

func TestConcurrentDuplicateGetsInProgressWithRetryAfter(t *testing.T) {
	f := newFixture(t, func(o *idem.Options) { o.Lease = 20 * time.Second })
	release := holdKey(t, f.Store, req("alice", "k1", `{}`))
	defer release()
	var runs atomic.Int32
	_, err := f.NewStore().Do(context.Background(), req("alice", "k1", `{}`), f.createOrder("alice", "o1", &runs))
	var inProgress *idem.InProgressError
	if !errors.Is(err, idem.ErrInProgress) || !errors.As(err, &inProgress) {
		t.Fatalf("err = %v, want an InProgressError", err)
	}
	if inProgress.RetryAfter < 19*time.Second || inProgress.RetryAfter > 20*time.Second {
		t.Fatalf("RetryAfter = %v, want the lease left, about 20s", inProgress.RetryAfter)
	}
	if runs.Load() != 0 {
		t.Fatal("duplicate ran the work")
	}
}

func TestWaitingDuplicateReplaysOnceCompleted(t *testing.T) {
	f := newFixture(t)
	release := holdKey(t, f.Store, req("alice", "k1", `{}`))
	waiter := f.NewStore(func(o *idem.Options) { o.Wait = 5 * time.Second; o.PollInterval = 20 * time.Millisecond })
	got := make(chan idem.Result, 1)
	errc := make(chan error, 1)
	go func() {
		res, err := waiter.Do(context.Background(), req("alice", "k1", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			t.Error("waiter ran the work")
			return idem.Response{}, nil
		})
		got <- res
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond) // the waiter is polling now
	release()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	res := <-got
	if !res.Replayed || string(res.Response.Body) != "held" {
		t.Fatalf("waiter got %+v, want the holder's response replayed", res)
	}
	if f.DB.Get("GetItem") == 0 {
		t.Fatal("waiter never polled")
	}
}

func TestWaitingDuplicateGivesUpWithInProgress(t *testing.T) {
	f := newFixture(t)
	release := holdKey(t, f.Store, req("alice", "k1", `{}`))
	defer release()
	waiter := f.NewStore(func(o *idem.Options) { o.Wait = 150 * time.Millisecond; o.PollInterval = 20 * time.Millisecond })
	start := time.Now()
	_, err := waiter.Do(context.Background(), req("alice", "k1", `{}`), f.createOrder("alice", "o1", nil))
	if !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("err = %v, want ErrInProgress after the wait", err)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Fatalf("gave up after %v, before the wait of 150ms", waited)
	}
}

// crashAfterClaim leaves the key as a process that died after claiming would:
// claimed, never committed, never released.
func crashAfterClaim(t *testing.T, f *fixture, r idem.Request) {
	t.Helper()
	dead := idemtest.NewFaults(t, f.Raw)
	dead.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.CrashAfter})
	s, err := idem.New(dead, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now; o.Lease = 10 * time.Second })
	if err != nil {
		t.Fatal(err)
	}
	if !idemtest.Invoke(context.Background(), func(ctx context.Context) {
		_, _ = s.Do(ctx, r, f.createOrder(r.Scope, "crashed", nil))
	}) {
		t.Fatal("a call whose process was killed after its claim returned")
	}
	if str(f.Record(r.Scope, r.Key), "status") != "IN_PROGRESS" {
		t.Fatal("crash did not leave the record in progress")
	}
}

func TestTakeoverAfterLeaseExpiry(t *testing.T) {
	f := newFixture(t)
	r := req("alice", "k1", `{}`)
	crashAfterClaim(t, f, r)
	ctx := context.Background()

	// While the dead holder's lease is live, a retry is told to wait.
	if _, err := f.Store.Do(ctx, r, f.createOrder("alice", "o1", nil)); !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("err = %v before the lease ended, want ErrInProgress", err)
	}
	f.Clock.Advance(11 * time.Second)
	// A different request still may not take the key over.
	if _, err := f.Store.Do(ctx, req("alice", "k1", `{"other":1}`), f.createOrder("alice", "o2", nil)); !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("err = %v for a different request after the lease, want ErrFingerprintMismatch", err)
	}
	res, err := f.Store.Do(ctx, r, f.createOrder("alice", "o1", nil))
	if err != nil || res.Replayed || res.Response.StatusCode != 201 {
		t.Fatalf("takeover = %+v, %v; want a fresh 201", res, err)
	}
	rec := f.Record("alice", "k1")
	if str(rec, "status") != "COMPLETED" || rec["attempts"].(*types.AttributeValueMemberN).Value != "2" {
		t.Fatalf("record = %v, want COMPLETED on attempt 2", rec)
	}
}

func TestFencedSlowHolderCommitsNothing(t *testing.T) {
	// The slow holder comes back either after the taker completed or while
	// the taker is still working: the second is what the lease token alone
	// fences, since the record is then still in progress.
	for _, takerDoneFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("taker_done_first=%v", takerDoneFirst), func(t *testing.T) {
			f := newFixture(t, func(o *idem.Options) { o.Lease = 10 * time.Second })
			r := req("alice", "k1", `{}`)
			ctx := context.Background()
			slow := make(chan error, 1)
			slowStalled, slowResume := make(chan struct{}), make(chan struct{})
			go func() {
				_, err := f.Store.Do(ctx, r, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
					close(slowStalled)
					<-slowResume // stalls past its lease: a GC pause, a slow call
					tx.Add(f.OrderPut("alice", "slow-order", "slow"), nil)
					return idem.Response{StatusCode: 201, Body: []byte("slow")}, nil
				})
				slow <- err
			}()
			<-slowStalled
			f.Clock.Advance(11 * time.Second)

			taker := make(chan error, 1)
			takerWorking, takerResume := make(chan struct{}), make(chan struct{})
			go func() {
				res, err := f.NewStore().Do(ctx, r, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
					close(takerWorking)
					<-takerResume
					tx.Add(f.OrderPut("alice", "taker-order", "taker"), nil)
					return idem.Response{StatusCode: 201, Body: []byte("taker")}, nil
				})
				if err == nil && string(res.Response.Body) != "taker" {
					err = fmt.Errorf("taker got %q", res.Response.Body)
				}
				taker <- err
			}()
			<-takerWorking
			if takerDoneFirst {
				close(takerResume)
				if err := <-taker; err != nil {
					t.Fatalf("taker: %v", err)
				}
			}
			close(slowResume)
			if err := <-slow; !errors.Is(err, idem.ErrLeaseLost) {
				t.Fatalf("slow holder err = %v, want ErrLeaseLost", err)
			}
			if !takerDoneFirst {
				close(takerResume)
				if err := <-taker; err != nil {
					t.Fatalf("taker: %v", err)
				}
			}
			if f.Order("alice", "slow-order") != nil {
				t.Fatal("the fenced holder's business write was committed")
			}
			if f.Order("alice", "taker-order") == nil {
				t.Fatal("the taker's business write is missing")
			}
			replay, err := f.Store.Do(ctx, r, f.createOrder("alice", "x", nil))
			if err != nil || string(replay.Response.Body) != "taker" {
				t.Fatalf("replay after the race = %+v, %v; want the taker's response", replay, err)
			}
		})
	}
}

// A work error lapses the lease and keeps the record bound to its request:
// another request under the key is refused, the same request takes over at
// once (whatever the clock says) and runs the work again.
func TestErrorLapsesLeaseAndRetryTakesOver(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := req("alice", "k1", `{}`)
	transient := errors.New("provider timed out")
	_, err := f.Store.Do(ctx, r, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(f.OrderPut("alice", "o1", "never"), nil)
		return idem.Response{}, transient
	})
	if !errors.Is(err, transient) {
		t.Fatalf("err = %v, want the work's error", err)
	}
	if f.Order("alice", "o1") != nil {
		t.Fatal("a failed operation left a business write")
	}
	f.Lapsed("alice", "k1", r.Fingerprint)
	if _, err := f.Store.Do(ctx, req("alice", "k1", `{"other":1}`), f.createOrder("alice", "o2", nil)); !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("another request under the lapsed key: %v, want ErrFingerprintMismatch", err)
	}
	var runs atomic.Int32
	res, err := f.Store.Do(ctx, r, f.createOrder("alice", "o1", &runs))
	if err != nil || res.Replayed || runs.Load() != 1 {
		t.Fatalf("retry = %+v, %v after %d runs; want the work to run again", res, err, runs.Load())
	}
	if got := num(f.Record("alice", "k1"), "attempts"); got != "2" {
		t.Fatalf("attempts = %s, want 2: the retry took the lapsed lease over", got)
	}
}

func TestStoredResponsesOfAnyStatusReplay(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	declined := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 402, Body: []byte(`{"error":"card_declined"}`)}, nil
	}
	if _, err := f.Store.Do(ctx, req("alice", "k1", `{}`), declined); err != nil {
		t.Fatal(err)
	}
	res, err := f.Store.Do(ctx, req("alice", "k1", `{}`), f.createOrder("alice", "o1", nil))
	if err != nil || !res.Replayed || res.Response.StatusCode != 402 {
		t.Fatalf("got %+v, %v; want the 402 replayed", res, err)
	}
}

// TestExpiredRecordIsTreatedAsAbsent holds the library's promise that a
// record past its expires_at is absent to every call, whether TTL has
// deleted it yet or not: DynamoDB deletes expired items in the background,
// within days. Each case writes a record, then moves the store's clock past
// its expires_at; the engine, whose TTL runs on the real time, leaves the
// item in place (checked), so no case waits on a sweep. The last case
// deletes the item as TTL would.
func TestExpiredRecordIsTreatedAsAbsent(t *testing.T) {
	ttl := idem.MinTTL
	cache := func(o *idem.Options) { o.TTL, o.Cache = ttl, idem.CacheOptions{MaxEntries: 10, MaxBytes: 1 << 20} }
	cases := []struct {
		name    string
		opts    func(*idem.Options)
		leave   func(t *testing.T, f *fixture) // the record, before it expires
		deleted bool                           // then gone from the table, as TTL deletes it
	}{
		{"completed", func(o *idem.Options) { o.TTL = ttl }, completedRecord, false},
		{"completed, and replayed from the cache", cache, func(t *testing.T, f *fixture) {
			completedRecord(t, f)
			if res, err := f.Store.Do(context.Background(), req("alice", "k1", `{"v":1}`), f.createOrder("alice", "o1", nil)); err != nil || !res.Replayed {
				t.Fatalf("got %+v, %v; want the replay that fills the cache", res, err)
			}
		}, false},
		{"in progress, its holder dead", func(o *idem.Options) { o.TTL = ttl }, func(t *testing.T, f *fixture) { claimOnly(t, f, ttl) }, false},
		{"deleted from the table", func(o *idem.Options) { o.TTL = ttl }, completedRecord, true},
	}
	for _, tc := range cases {
		for _, call := range expiredCalls {
			t.Run(tc.name+"/"+call.name, func(t *testing.T) {
				f := newFixture(t, tc.opts)
				tc.leave(t, f)
				f.Clock.Advance(ttl + time.Minute)
				if tc.deleted {
					f.deleteRecord("alice", "k1")
				} else if f.Record("alice", "k1") == nil {
					t.Fatal("the expired record is gone from the table: the case would not test what it says")
				}
				call.check(t, f)
			})
		}
	}
}

// completedRecord leaves (alice, k1) completed for the body {"v":1}.
func completedRecord(t *testing.T, f *fixture) {
	t.Helper()
	if _, err := f.Store.Do(context.Background(), req("alice", "k1", `{"v":1}`), f.createOrder("alice", "o1", nil)); err != nil {
		t.Fatal(err)
	}
}

// claimOnly leaves (alice, k1) claimed for {"v":1} by a holder whose
// process stops for good in the work: it never sends its commit nor a
// lapse. (Its goroutine stays blocked until the test binary exits, as a
// frozen process would.)
func claimOnly(t *testing.T, f *fixture, ttl time.Duration) {
	t.Helper()
	holder := f.NewStore(func(o *idem.Options) { o.TTL = ttl })
	claimed := make(chan struct{})
	go func() {
		_, _ = holder.Do(context.Background(), req("alice", "k1", `{"v":1}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) { // never returns: the process stops in the work
			close(claimed)
			select {}
		})
	}()
	<-claimed
	if str(f.Record("alice", "k1"), "status") != "IN_PROGRESS" {
		t.Fatal("the holder's claim is not in the table")
	}
}

// deleteRecord deletes (scope, key)'s record, as TTL does.
func (f *fixture) deleteRecord(scope, key string) {
	f.T.Helper()
	pk := strconv.Itoa(len(scope)) + ":" + scope + ":" + key
	if _, err := f.Raw.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(f.Table),
		Key: map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: pk}}}); err != nil {
		f.T.Fatal(err)
	}
}

// expiredCalls are every call of a Store on an expired (alice, k1), each
// with what it must do: as if there were no record.
var expiredCalls = []struct {
	name  string
	check func(t *testing.T, f *fixture)
}{
	{"Do with the same request runs it again", func(t *testing.T, f *fixture) {
		runsOnce(t, f, f.Store.Do, `{"v":1}`, "o2")
	}},
	{"Do with another request runs it", func(t *testing.T, f *fixture) {
		runsOnce(t, f, f.Store.Do, `{"v":2}`, "o2")
	}},
	{"DoAtomic with the same request runs it again", func(t *testing.T, f *fixture) {
		runsOnce(t, f, f.Store.DoAtomic, `{"v":1}`, "o2")
	}},
	{"DoAtomic with another request runs it", func(t *testing.T, f *fixture) {
		runsOnce(t, f, f.Store.DoAtomic, `{"v":2}`, "o2")
	}},
	{"Inspect finds no record", func(t *testing.T, f *fixture) {
		if rec, err := f.Store.Inspect(context.Background(), "alice", "k1"); !errors.Is(err, idem.ErrNoRecord) {
			t.Fatalf("Inspect = %+v, %v; want ErrNoRecord", rec, err)
		}
	}},
}

// runsOnce sends body under (alice, k1) through do: its work runs once,
// its write commits, and the retry replays its answer (DoAtomic's retry
// runs the work again before it finds the record, and commits nothing).
func runsOnce(t *testing.T, f *fixture, do func(context.Context, idem.Request, idem.Work) (idem.Result, error), body, order string) {
	t.Helper()
	var runs atomic.Int32
	res, err := do(context.Background(), req("alice", "k1", body), f.createOrder("alice", order, &runs))
	if err != nil || res.Replayed || runs.Load() != 1 || res.Response.StatusCode != 201 || string(res.Response.Body) != `{"order_id":"`+order+`"}` {
		t.Fatalf("got %+v, %v after %d runs; want the work run once, as on a key with no record", res, err, runs.Load())
	}
	if f.Order("alice", order) == nil {
		t.Fatalf("the work's write of %s did not commit", order)
	}
	res, err = do(context.Background(), req("alice", "k1", body), f.createOrder("alice", order, nil))
	if err != nil || !res.Replayed || string(res.Response.Body) != `{"order_id":"`+order+`"}` {
		t.Fatalf("its retry: got %+v, %v; want the new answer replayed", res, err)
	}
}

func TestScopesAreSeparateOperations(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var runs atomic.Int32
	for _, scope := range []string{"alice", "bob", "alice#", "5:alice"} {
		res, err := f.Store.Do(ctx, req(scope, "shared-key", `{}`), f.createOrder(scope, "o1", &runs))
		if err != nil || res.Replayed {
			t.Fatalf("scope %q: got %+v, %v; want its own execution", scope, res, err)
		}
	}
	if runs.Load() != 4 {
		t.Fatalf("runs = %d, want one per scope", runs.Load())
	}
}

func TestRacingDuplicatesExecuteOnce(t *testing.T) {
	f := newFixture(t)
	const n = 50
	var runs atomic.Int32
	results := make([]idem.Result, n)
	errs := make([]error, n)
	race(n, func(i int) {
		results[i], errs[i] = f.NewStore().Do(context.Background(), req("alice", "race", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			runs.Add(1)
			tx.Add(f.OrderPut("alice", "race-order", strconv.Itoa(i)), nil)
			return idem.Response{StatusCode: 201, Body: []byte("winner " + strconv.Itoa(i))}, nil
		})
	})
	if runs.Load() != 1 {
		t.Fatalf("work ran %d times, want 1", runs.Load())
	}
	winner := str(f.Order("alice", "race-order"), "note")
	executed, replayed, conflicts := 0, 0, 0
	for i := range n {
		switch {
		case errors.Is(errs[i], idem.ErrInProgress):
			conflicts++
		case errs[i] != nil:
			t.Fatalf("caller %d: %v", i, errs[i])
		case string(results[i].Response.Body) != "winner "+winner:
			t.Fatalf("caller %d got %q, want the winner's response", i, results[i].Response.Body)
		case results[i].Replayed:
			replayed++
		default:
			executed++
		}
	}
	if executed != 1 || executed+replayed+conflicts != n {
		t.Fatalf("executed=%d replayed=%d conflicts=%d", executed, replayed, conflicts)
	}
	t.Logf("executed=%d replayed=%d in-progress=%d", executed, replayed, conflicts)
}

// A lease cut short by the request's deadline keeps a quarter of itself
// back for the commit, not the whole CommitReserve (1 s by default), which
// would leave the work little or nothing of a short lease.
func TestACutLeaseKeepsAQuarterForTheCommit(t *testing.T) {
	f := newFixture(t, func(o *idem.Options) { o.Lease = time.Minute })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var lease, reserve time.Duration
	_, err := f.Store.Do(ctx, req("alice", "k1", `{}`), func(wctx context.Context, tx *idem.Tx) (idem.Response, error) {
		deadline, _ := wctx.Deadline()
		left := time.Until(deadline) // first: the time since the deadline was set counts in the reserve below
		until, _ := strconv.ParseInt(num(f.Record("alice", "k1"), "lease_until"), 10, 64)
		lease = time.UnixMilli(until).Sub(f.Clock.Now()) // the Store's clock stands still
		reserve = lease - left
		return idem.Response{StatusCode: 200}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lease > 2*time.Second || reserve < lease/4 || reserve > lease/4+300*time.Millisecond {
		t.Fatalf("lease %v, reserve %v; want a lease cut to the 2 s deadline, a quarter of it kept back", lease, reserve)
	}
}

func TestLeaseIsBoundedByDeadline(t *testing.T) {
	f := newFixture(t, func(o *idem.Options) { o.Lease = time.Minute })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var leaseMs int64
	var workDeadline time.Time
	_, err := f.Store.Do(ctx, req("alice", "k1", `{}`), func(wctx context.Context, tx *idem.Tx) (idem.Response, error) {
		rec := f.Record("alice", "k1")
		until, _ := strconv.ParseInt(rec["lease_until"].(*types.AttributeValueMemberN).Value, 10, 64)
		leaseMs = until - f.Clock.Now().UnixMilli()
		workDeadline, _ = wctx.Deadline()
		return idem.Response{StatusCode: 200}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if leaseMs > 3000 || leaseMs < 2500 {
		t.Fatalf("lease = %dms, want it cut to the 3s deadline", leaseMs)
	}
	ctxDeadline, _ := ctx.Deadline()
	if !workDeadline.Before(ctxDeadline) {
		t.Fatalf("work deadline %v is not before the lease's end %v", workDeadline, ctxDeadline)
	}
}

// The ConflictFunc asked is the one of the write whose condition failed,
// wherever it stands in the transaction: the record's put comes first, so
// the n-th write's reason is the transaction's (n+1)-th.
func TestBusinessConflictAsksTheWriteThatFailed(t *testing.T) {
	for _, at := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("write %d of 3", at), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if _, err := f.Raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Business), Item: f.OrderPut("alice", "taken", "existing").Put.Item}); err != nil {
				t.Fatal(err)
			}
			var asked []int
			work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				for i := range 3 {
					id := fmt.Sprintf("free%d", i)
					if i == at {
						id = "taken"
					}
					tx.Add(f.OrderPut("alice", id, "new"), func(map[string]types.AttributeValue) (idem.Response, error) {
						asked = append(asked, i)
						return idem.Response{StatusCode: 409, Body: []byte(`{"error":"order_id_taken"}`)}, nil
					})
				}
				return idem.Response{StatusCode: 201}, nil
			}
			res, err := f.Store.Do(ctx, req("alice", "k1", `{}`), work)
			if err != nil || res.Response.StatusCode != 409 || !slices.Equal(asked, []int{at}) {
				t.Fatalf("got %+v, %v, ConflictFuncs asked %v; want the 409 of write %d's alone", res, err, asked, at)
			}
		})
	}
}

func TestBusinessConflictStoresDecidedResponseWithoutWrites(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.Raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Business), Item: f.OrderPut("alice", "taken", "existing").Put.Item}); err != nil {
		t.Fatal(err)
	}
	var sawOld string
	work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(f.OrderPut("alice", "taken", "new"), func(old map[string]types.AttributeValue) (idem.Response, error) {
			sawOld = str(old, "note")
			return idem.Response{StatusCode: 409, Body: []byte(`{"error":"order_id_taken"}`)}, nil
		})
		tx.Add(f.OrderPut("alice", "side", "must not land"), nil)
		return idem.Response{StatusCode: 201}, nil
	}
	res, err := f.Store.Do(ctx, req("alice", "k1", `{}`), work)
	if err != nil || res.Response.StatusCode != 409 {
		t.Fatalf("got %+v, %v; want the ConflictFunc's 409", res, err)
	}
	if sawOld != "existing" {
		t.Fatalf("ConflictFunc saw note %q, want the existing item", sawOld)
	}
	if str(f.Order("alice", "taken"), "note") != "existing" || f.Order("alice", "side") != nil {
		t.Fatal("a write of the conflicted transaction landed")
	}
	replay, err := f.Store.Do(ctx, req("alice", "k1", `{}`), work)
	if err != nil || !replay.Replayed || replay.Response.StatusCode != 409 {
		t.Fatalf("replay = %+v, %v; want the 409 stored", replay, err)
	}
}

func TestBusinessConflictWithoutHandlerLapsesLease(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.Raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Business), Item: f.OrderPut("alice", "taken", "existing").Put.Item}); err != nil {
		t.Fatal(err)
	}
	_, err := f.Store.Do(ctx, req("alice", "k1", `{}`), f.createOrder("alice", "taken", nil))
	if !errors.Is(err, idem.ErrWriteConditionFailed) {
		t.Fatalf("err = %v, want ErrWriteConditionFailed", err)
	}
	f.Lapsed("alice", "k1", req("alice", "k1", `{}`).Fingerprint)
}

func TestCommitWhoseAnswerWasLostSucceeds(t *testing.T) {
	cases := []struct {
		name string
		// after rewrites the answer of a transaction that committed.
		after func(f *fixture) func(context.Context, *dynamodb.TransactWriteItemsInput, *dynamodb.TransactWriteItemsOutput, error) (*dynamodb.TransactWriteItemsOutput, error)
	}{
		{"timeout after commit", func(f *fixture) func(context.Context, *dynamodb.TransactWriteItemsInput, *dynamodb.TransactWriteItemsOutput, error) (*dynamodb.TransactWriteItemsOutput, error) {
			return func(_ context.Context, _ *dynamodb.TransactWriteItemsInput, out *dynamodb.TransactWriteItemsOutput, err error) (*dynamodb.TransactWriteItemsOutput, error) {
				if err != nil {
					return out, err
				}
				return nil, context.DeadlineExceeded
			}
		}},
		// As an SDK retry does: the same input, the same ClientRequestToken.
		// DynamoDB Local, like DynamoDB, does not apply it again (the
		// order's condition would cancel it).
		{"resent with its token: the engine answers the first commit's success", resend(nil, func(err error) bool { return err == nil })},
		// As the same commit sent without ClientRequestToken, or a put
		// (which has none), comes back: the record's fence fails on the
		// commit itself, read back under this lease's own token.
		{"resent without its token comes back cancelled", resend(
			func(_ *fixture, in *dynamodb.TransactWriteItemsInput) { in.ClientRequestToken = nil },
			func(err error) bool { return errors.As(err, new(*types.TransactionCanceledException)) })},
		// The library never sends one token with two sets of items; if an
		// engine ever answers so, the commit's outcome is unknown to it,
		// settled from the record.
		{"resent with its token and other items: IdempotentParameterMismatch", resend(
			func(f *fixture, in *dynamodb.TransactWriteItemsInput) {
				in.TransactItems = append(slices.Clone(in.TransactItems), f.OrderPut("alice", "o-other", "other"))
			},
			func(err error) bool { return errors.As(err, new(*types.IdempotentParameterMismatchException)) })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.DB.AfterTx = tc.after(f)
			res, err := f.Store.Do(context.Background(), req("alice", "k1", `{}`), f.createOrder("alice", "o1", nil))
			if err != nil || res.Response.StatusCode != 201 || res.Replayed {
				t.Fatalf("got %+v, %v; want the committed 201", res, err)
			}
			if str(f.Record("alice", "k1"), "status") != "COMPLETED" || f.Order("alice", "o1") == nil || f.Order("alice", "o-other") != nil {
				t.Fatal("commit not in the table as sent once")
			}
		})
	}
}

// resend is an AfterTx hook that sends a committed transaction again, as
// change makes it (nil: unchanged), checks the engine's answer with want,
// and hands that answer to the library.
func resend(change func(*fixture, *dynamodb.TransactWriteItemsInput), want func(error) bool) func(f *fixture) func(context.Context, *dynamodb.TransactWriteItemsInput, *dynamodb.TransactWriteItemsOutput, error) (*dynamodb.TransactWriteItemsOutput, error) {
	return func(f *fixture) func(context.Context, *dynamodb.TransactWriteItemsInput, *dynamodb.TransactWriteItemsOutput, error) (*dynamodb.TransactWriteItemsOutput, error) {
		return func(ctx context.Context, in *dynamodb.TransactWriteItemsInput, out *dynamodb.TransactWriteItemsOutput, err error) (*dynamodb.TransactWriteItemsOutput, error) {
			if err != nil {
				return out, err
			}
			again := *in
			if change != nil {
				change(f, &again)
			}
			out, err = f.Raw.TransactWriteItems(ctx, &again)
			if !want(err) {
				f.T.Errorf("the resent transaction: %v, not the engine's answer the case expects", err)
			}
			return out, err
		}
	}
}

func TestTransactionConflictIsRetried(t *testing.T) {
	f := newFixture(t)
	var failed atomic.Bool
	f.DB.Before = func(op string) error {
		if op == "TransactWriteItems" && !failed.Swap(true) {
			return &types.TransactionCanceledException{
				Message:             aws.String("conflict"),
				CancellationReasons: []types.CancellationReason{{Code: aws.String("None")}, {Code: aws.String("TransactionConflict")}},
			}
		}
		return nil
	}
	res, err := f.Store.Do(context.Background(), req("alice", "k1", `{}`), f.createOrder("alice", "o1", nil))
	if err != nil || res.Response.StatusCode != 201 {
		t.Fatalf("got %+v, %v; want the retried commit", res, err)
	}
	if f.DB.Get("TransactWriteItems") != 2 {
		t.Fatalf("TransactWriteItems calls = %d, want 2", f.DB.Get("TransactWriteItems"))
	}
}

// A transaction cancelled for a reason that is not the writes' own (a
// conflict past the retries, a throttle) committed nothing and may succeed
// when sent again: it lapses the key for the request's retry, and is never
// ErrInvalidWrite, which says the writes are refused as written.
func TestACancellationThatIsNotTheWritesIsNoInvalidWrite(t *testing.T) {
	for _, code := range []string{"TransactionConflict", "ThrottlingError"} {
		t.Run(code, func(t *testing.T) {
			f := newFixture(t)
			f.DB.Before = func(op string) error {
				if op == "TransactWriteItems" {
					return &types.TransactionCanceledException{
						Message:             aws.String("cancelled"),
						CancellationReasons: []types.CancellationReason{{Code: aws.String("None")}, {Code: aws.String(code)}},
					}
				}
				return nil
			}
			r := req("alice", "k1", `{}`)
			_, err := f.Store.Do(context.Background(), r, f.createOrder("alice", "o1", nil))
			if err == nil || errors.Is(err, idem.ErrInvalidWrite) {
				t.Fatalf("err = %v, want a failure that is not ErrInvalidWrite", err)
			}
			if f.Order("alice", "o1") != nil {
				t.Fatal("a cancelled transaction left a write")
			}
			f.Lapsed("alice", "k1", r.Fingerprint)
		})
	}
}

func TestUnknownCommitOutcomeLapsesWhenNothingLanded(t *testing.T) {
	f := newFixture(t)
	f.DB.Before = func(op string) error {
		if op == "TransactWriteItems" {
			return errors.New("connection reset")
		}
		return nil
	}
	_, err := f.Store.Do(context.Background(), req("alice", "k1", `{}`), f.createOrder("alice", "o1", nil))
	if err == nil || errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("err = %v, want a plain failure", err)
	}
	if f.Order("alice", "o1") != nil {
		t.Fatal("an uncommitted operation left a write")
	}
	f.Lapsed("alice", "k1", req("alice", "k1", `{}`).Fingerprint)
}

// TestWhatEachPathSends holds the docs of Do, DoAtomic, Tx and Commit to
// the calls each sends for a first request: Do the claim's PutItem, then a
// TransactWriteItems with the writes or, with none, a PutItem of the record
// alone; DoAtomic that commit alone; Commit the writes' TransactWriteItems,
// and nothing for a Tx with none. (A fault meant for a lost commit must be
// injected into the call that is sent.)
func TestWhatEachPathSends(t *testing.T) {
	cases := []struct {
		path   string
		writes bool
		want   map[string]int
	}{
		{"Do", true, map[string]int{"PutItem": 1, "TransactWriteItems": 1}},
		{"Do", false, map[string]int{"PutItem": 2}},
		{"DoAtomic", true, map[string]int{"TransactWriteItems": 1}},
		{"DoAtomic", false, map[string]int{"PutItem": 1}},
		{"Commit", true, map[string]int{"TransactWriteItems": 1}},
		{"Commit", false, map[string]int{}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s with writes %v", tc.path, tc.writes), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				if tc.writes {
					tx.Add(f.OrderPut("alice", "o1", "first"), nil)
				}
				return idem.Response{StatusCode: 201}, nil
			}
			var err error
			switch tc.path {
			case "Do":
				_, err = f.Store.Do(ctx, req("alice", "k1", `{}`), work)
			case "DoAtomic":
				_, err = f.Store.DoAtomic(ctx, req("alice", "k1", `{}`), work)
			case "Commit":
				var tx idem.Tx
				if _, err = work(ctx, &tx); err == nil {
					_, err = f.Store.Commit(ctx, &tx)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.DB.Calls(); !maps.Equal(got, tc.want) {
				t.Fatalf("sent %v, want %v", got, tc.want)
			}
			if tc.path != "Commit" && str(f.Record("alice", "k1"), "status") != "COMPLETED" {
				t.Fatal("the record is not completed")
			}
			if (f.Order("alice", "o1") != nil) != tc.writes {
				t.Fatalf("the order is there: %v, want %v", f.Order("alice", "o1") != nil, tc.writes)
			}
		})
	}
}
