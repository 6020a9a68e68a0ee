package idem_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
	"github.com/idemkeys/idem/pkg/idemtest"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// stormed is a store on the fixture's table and clock whose calls go
// through a fault proxy, with the SDK's own retries as they come (its
// default retryer, whose backoff runs to seconds), counted.
func (f *fixture) stormed() (*faultproxy.Proxy, *testbed.Counter, *idem.Store) {
	f.T.Helper()
	endpoint, err := idemtest.Endpoint()
	if err != nil {
		f.T.Fatal(err)
	}
	proxy, err := faultproxy.New(endpoint)
	if err != nil {
		f.T.Fatal(err)
	}
	srv := httptest.NewServer(proxy)
	f.T.Cleanup(srv.Close)
	db := &testbed.Counter{API: idemtest.Client(f.T, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(srv.URL) })}
	s, err := idem.New(db, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now })
	if err != nil {
		f.T.Fatal(err)
	}
	return proxy, db, s
}

// firstTime records when a fault first acted: when a release began
// sending.
type firstTime struct {
	once sync.Once
	at   time.Time
}

func (ft *firstTime) reached() { ft.once.Do(func() { ft.at = time.Now() }) }

// storm is a fault on every call of op (whose body holds match) for as
// long as a test runs.
func storm(op, match string, kind faultproxy.Kind, reached func()) faultproxy.Fault {
	return faultproxy.Fault{Op: op, Match: match, Kind: kind, Times: 1 << 20, Reached: reached}
}

// slack is what the bounds below allow past a release's own bound: the
// answer's way back through the SDK and this package on a loaded machine.
const slack = 2 * time.Second

// TestReleasesUnderAThrottleStormAreBounded: a release (settle's lapse,
// DoAtomic's and a claim's hand-back) that DynamoDB throttles for good is
// given up within SettleFor of its first send, whatever the SDK's own
// retries would take, and says the outcome is unknown. What it could not
// release is left to run out: the same request is 409 while its lease
// lives, takes the key over once it is over, and commits once.
func TestReleasesUnderAThrottleStormAreBounded(t *testing.T) {
	if idem.SettleFor != 5*time.Second {
		t.Fatalf("SettleFor is %v; the package doc says 5 s", idem.SettleFor)
	}
	cases := []struct {
		name    string
		atomic  bool
		faults  func(reached func()) []faultproxy.Fault
		claimed bool // the claim landed: its lease is left to run out
	}{
		{"settle's lapse", false, func(reached func()) []faultproxy.Fault {
			return []faultproxy.Fault{storm("TransactWriteItems", "", faultproxy.ServerError, nil), storm("UpdateItem", "", faultproxy.Throttle, reached)}
		}, true},
		{"DoAtomic's hand-back", true, func(reached func()) []faultproxy.Fault {
			return []faultproxy.Fault{storm("TransactWriteItems", "", faultproxy.ServerError, nil), storm("PutItem", "", faultproxy.Throttle, reached)}
		}, false},
		{"a claim's hand-back", false, func(reached func()) []faultproxy.Fault {
			// The hand-back's put carries the lapsed token; the claim's does not.
			return []faultproxy.Fault{storm("PutItem", ".lapsed", faultproxy.Throttle, reached), storm("PutItem", "", faultproxy.Throttle, nil)}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each case waits out a release's whole budget: side by side,
			// each on its own proxy and table, as each release keeps its
			// own clock.
			t.Parallel()
			f := newFixture(t)
			proxy, _, store := f.stormed()
			var began firstTime
			for _, fault := range tc.faults(began.reached) {
				proxy.Inject(fault)
			}
			do := store.Do
			if tc.atomic {
				do = store.DoAtomic
			}
			r := req("alice", "k1", `{}`)
			var runs atomic.Int32
			work := f.createOrder("alice", "o1", &runs)
			_, err := do(context.Background(), r, work)
			answered := time.Now()
			if began.at.IsZero() {
				t.Fatalf("no release was sent (err %v): the case tests nothing", err)
			}
			if took := answered.Sub(began.at); err == nil || !strings.Contains(err.Error(), "unknown") || took > idem.SettleFor+slack {
				t.Fatalf("answered %v after the release began: %v; want the outcome unknown within %v", took, err, idem.SettleFor+slack)
			}
			proxy.Clear() // the storm is over
			if tc.claimed {
				if _, err := store.Do(context.Background(), r, work); !errors.Is(err, idem.ErrInProgress) {
					t.Fatalf("retry while the lease lives: %v, want ErrInProgress", err)
				}
				f.Clock.Advance(31 * time.Second) // past the default lease
			}
			res, err := do(context.Background(), r, work)
			if err != nil || res.Response.StatusCode != 201 || res.Replayed || f.orders("alice") != 1 {
				t.Fatalf("retry = %+v, %v, %d orders; want the work committed once", res, err, f.orders("alice"))
			}
		})
	}
}

// TestAReleaseEndsWithTheRequestsContext: a settle whose lapse is
// throttled for good is given up once the request's context is done, well
// before SettleFor, when that comes first.
func TestAReleaseEndsWithTheRequestsContext(t *testing.T) {
	f := newFixture(t)
	proxy, db, store := f.stormed()
	db.Before = func(op string) error {
		if op == "TransactWriteItems" {
			return errors.New("read tcp 127.0.0.1:8000: i/o timeout") // the commit's outcome unknown at once
		}
		return nil
	}
	var began firstTime
	proxy.Inject(storm("UpdateItem", "", faultproxy.Throttle, began.reached))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	_, err := store.Do(ctx, req("alice", "k1", `{}`), f.createOrder("alice", "o1", nil))
	late := time.Since(deadline)
	if began.at.IsZero() || err == nil || !strings.Contains(err.Error(), "unknown") || late > slack {
		t.Fatalf("answered %v past the request's deadline: %v; want the outcome unknown within %v of it", late, err, slack)
	}
}

// TestAReleaseIsSentWhenTheRequestsContextIsOver: a work that fails
// because its request was cancelled still has its lease lapsed, so that
// the retry takes the key over at once.
func TestAReleaseIsSentWhenTheRequestsContextIsOver(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := req("alice", "k1", `{}`)
	_, err := f.Store.Do(ctx, r, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		cancel() // the client went away
		return idem.Response{}, context.Cause(ctx)
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want the work's error", err)
	}
	f.Lapsed("alice", "k1", r.Fingerprint)
}
