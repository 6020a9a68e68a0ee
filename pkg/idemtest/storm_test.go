package idemtest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// TestAThrottleStormIsAnsweredWithinTheStoresBudget measures what a throttle
// storm costs a request behind a door, on each path: the answer, and how
// long it took (logged, not asserted: the machine's load is in it). Where
// the storm holds back the call that would end the attempt (the claim's
// hand-back, the commit's lapse or hand-back), the Store sends it again for
// its retry budget, then answers 503 with Retry-After while the storm
// still blows: it gave up by itself, it did not wait the storm out. A
// storm on the commit alone is answered as soon as the lapse (Do) or the
// hand-back (DoAtomic) goes through. Either way nothing was committed.
func TestAThrottleStormIsAnsweredWithinTheStoresBudget(t *testing.T) {
	put, update, commit := idemtest.PutItem, idemtest.UpdateItem, idemtest.TransactWriteItems
	for _, c := range []struct {
		name   string
		atomic bool
		storm  []idemtest.Op
		left   string // the record after: "none", "lapsed" (the retry takes over at once), "live" (a lease to run out)
	}{
		{"Do/the claim and its hand-back", false, []idemtest.Op{put}, "none"},
		{"Do/the commit and its lapse", false, []idemtest.Op{commit, update}, "live"},
		{"Do/the commit", false, []idemtest.Op{commit}, "lapsed"},
		{"DoAtomic/the commit and its hand-back", true, []idemtest.Op{commit, put}, "none"},
		{"DoAtomic/the commit", true, []idemtest.Op{commit}, "lapsed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("waits out the Store's retry budget")
			}
			t.Parallel()
			s := idemtest.NewStore(t)
			h := stormDoor(s.Store, ordersTable(t, s.Client), c.atomic)
			const storm = 2 * time.Minute
			for _, op := range c.storm {
				s.Faults.Inject(idemtest.Fault{Op: op, Kind: idemtest.Throttle, For: storm})
			}
			start := time.Now()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, stormRequest())
			took := time.Since(start)
			t.Logf("%s throttled for %v: %d %q after %v, %d calls throttled", c.name, storm, w.Code, w.Header().Get("Retry-After"), took.Round(10*time.Millisecond), injected(s.Faults, c.storm))
			if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
				t.Errorf("answered %d (Retry-After %q) %s; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
			}
			if took >= storm {
				t.Errorf("answered after %v, once the storm of %v was over: the Store waited it out", took, storm)
			}
			if n := s.Faults.Commits(); n != 0 {
				t.Errorf("%d commits under a storm on the commit", n)
			}
			if n := injected(s.Faults, c.storm); len(c.storm) == 1 && c.storm[0] == commit && n != 1 {
				t.Errorf("%d calls throttled, want the commit alone: the lapse or hand-back goes through at once", n)
			}
			if left := recordLeft(t, s); left != c.left {
				t.Errorf("the storm left the record %s, want %s", left, c.left)
			}
		})
	}
}

// A storm that ends within the Store's budget costs about its own length:
// the hand-back it held back goes through once it ends, the answer is a
// 503 with Retry-After, and the retry takes effect once.
func TestAStormShorterThanTheBudgetIsAnsweredOnceItEnds(t *testing.T) {
	s := idemtest.NewStore(t)
	h := stormDoor(s.Store, ordersTable(t, s.Client), false)
	const storm = time.Second
	s.Faults.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Throttle, For: storm})
	start := time.Now()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, stormRequest())
	t.Logf("the claim throttled for %v: %d after %v, %d calls throttled", storm, w.Code, time.Since(start).Round(10*time.Millisecond), s.Faults.Injected(idemtest.PutItem))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || time.Since(start) < storm {
		t.Fatalf("answered %d (Retry-After %q) after %v; want 503 with Retry-After once the storm of %v was over", w.Code, w.Header().Get("Retry-After"), time.Since(start), storm)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, stormRequest())
	if w.Code != http.StatusCreated || s.Faults.Commits() != 1 {
		t.Fatalf("the retry after the storm: %d %s, %d commits; want 201, once", w.Code, w.Body, s.Faults.Commits())
	}
}

// A storm on AnyOp takes every call from its Nth on, whatever its
// operation: the claim (the first call) goes through, the commit and the
// lapse after it are throttled until the storm ends, and the totals count
// every operation's calls together.
func TestAStormOnAnyOpTakesEveryOperationsCalls(t *testing.T) {
	s := idemtest.NewStore(t)
	h := stormDoor(s.Store, ordersTable(t, s.Client), false)
	const storm = time.Second
	s.Faults.Inject(idemtest.Fault{Op: idemtest.AnyOp, Kind: idemtest.Throttle, Nth: 2, For: storm})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, stormRequest())
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("answered %d (Retry-After %q) %s; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	ops := []idemtest.Op{idemtest.PutItem, idemtest.GetItem, idemtest.UpdateItem, idemtest.TransactWriteItems}
	calls := 0
	for _, op := range ops {
		calls += s.Faults.Calls(op)
	}
	if s.Faults.Injected(idemtest.PutItem) != 0 || s.Faults.Injected(idemtest.TransactWriteItems) != 1 || s.Faults.Injected(idemtest.UpdateItem) < 1 {
		t.Errorf("throttled %d claims, %d commits, %d lapses; want the commit and the lapse, never the claim",
			s.Faults.Injected(idemtest.PutItem), s.Faults.Injected(idemtest.TransactWriteItems), s.Faults.Injected(idemtest.UpdateItem))
	}
	if s.Faults.Calls(idemtest.AnyOp) != calls || s.Faults.Injected(idemtest.AnyOp) != injected(s.Faults, ops) || s.Faults.Injected(idemtest.AnyOp) != calls-2 {
		t.Errorf("Calls(AnyOp) %d, Injected(AnyOp) %d; want the %d calls of every operation, all but the claim and the last lapse throttled", s.Faults.Calls(idemtest.AnyOp), s.Faults.Injected(idemtest.AnyOp), calls)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, stormRequest())
	if w.Code != http.StatusCreated || s.Faults.Commits() != 1 {
		t.Fatalf("the retry after the storm: %d %s, %d commits; want 201, once", w.Code, w.Body, s.Faults.Commits())
	}
}

// recordLeft is how the request left its record: none, lapsed or live.
func recordLeft(t *testing.T, s *idemtest.Store) string {
	t.Helper()
	rec, err := s.Inspect(context.Background(), "alice", "order-1")
	switch {
	case errors.Is(err, idem.ErrNoRecord):
		return "none"
	case err != nil:
		t.Fatal(err)
	case rec.Status != "IN_PROGRESS":
		return rec.Status
	case rec.LeaseLeft(s.Clock.Now()) > 0:
		return "live"
	}
	return "lapsed"
}

func injected(f *idemtest.Faults, ops []idemtest.Op) (n int) {
	for _, op := range ops {
		n += f.Injected(op)
	}
	return n
}

// stormDoor is an order's creation behind idemhttp.Wrap, one business
// write to orders, under Do or DoAtomic.
func stormDoor(s *idem.Store, orders string, atomic bool) http.Handler {
	return idemhttp.Wrap(s, func(body []byte) (string, error) { return string(body), nil },
		func(ctx context.Context, req idemhttp.Request[http.Request, string], tx *idem.Tx) (idem.Response, error) {
			tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(orders),
				Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "o1"}}}}, nil)
			return idem.Response{StatusCode: 201}, nil
		}, func(o *idemhttp.Options[http.Request]) {
			o.Scope = func(*http.Request) string { return "alice" }
			o.Atomic = atomic
		})
}

func stormRequest() *http.Request {
	r := httptest.NewRequest("POST", "/orders", strings.NewReader(`{"sku":"tea"}`))
	r.Header.Set(idemhttp.HeaderIdempotencyKey, "order-1")
	return r
}
