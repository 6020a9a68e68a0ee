package idem_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
)

func withCache(entries, bytes int) func(*idem.Options) {
	return func(o *idem.Options) { o.Cache = idem.CacheOptions{MaxEntries: entries, MaxBytes: bytes} }
}

func ok201(body string) idem.Work {
	return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 201, Body: []byte(body)}, nil
	}
}

// A replay found in the cache costs no DynamoDB call, on Do and DoAtomic,
// and the fingerprint is still checked there (422 from the cache).
func TestCacheReplaysWithoutDynamoDB(t *testing.T) {
	f := newFixture(t, withCache(100, 1<<20))
	ctx := context.Background()
	for _, do := range []func(context.Context, idem.Request, idem.Work) (idem.Result, error){f.store.Do, f.store.DoAtomic} {
		key := "k" + time.Now().Format("150405.000000")
		if _, err := do(ctx, req("alice", key, `{"a":1}`), ok201("first")); err != nil {
			t.Fatal(err)
		}
		f.db.Reset()
		res, err := do(ctx, req("alice", key, `{"a":1}`), ok201("second"))
		if err != nil || !res.Replayed || string(res.Response.Body) != "first" || f.db.Total() != 0 {
			t.Fatalf("cached replay = %+v %v with %v DynamoDB calls, want the first response and none", res, err, f.db.Calls())
		}
		if _, err := do(ctx, req("alice", key, `{"a":2}`), ok201("other")); !errors.Is(err, idem.ErrFingerprintMismatch) || f.db.Total() != 0 {
			t.Fatalf("another request under a cached key = %v with %v calls, want the 422 and none", err, f.db.Calls())
		}
	}
	// Another caller's same key is not the cached one.
	if res, err := f.store.Do(ctx, req("bob", "k1", `{"a":1}`), ok201("bob")); err != nil || res.Replayed {
		t.Fatalf("bob's k1 = %+v %v, want his own run", res, err)
	}
}

// A replay read from the table is cached too; an in-progress record never is.
func TestCacheKeepsOnlyCompletedRecords(t *testing.T) {
	f := newFixture(t, func(o *idem.Options) { o.Lease = 8 * time.Second })
	other := f.newStore(withCache(100, 1<<20)) // another execution environment
	ctx := context.Background()
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		f.store.Do(ctx, req("alice", "k1", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			close(held)
			<-release
			return idem.Response{StatusCode: 200, Body: []byte("done")}, nil
		})
		close(done)
	}()
	<-held
	if _, err := other.Do(ctx, req("alice", "k1", `{}`), ok201("x")); !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("while in progress: %v, want ErrInProgress", err)
	}
	close(release)
	<-done
	f.db.Reset()
	if res, err := other.Do(ctx, req("alice", "k1", `{}`), ok201("x")); err != nil || string(res.Response.Body) != "done" || f.db.Total() != 1 {
		t.Fatalf("after completion: %+v %v with %v calls, want the stored response read once (the 409 was not cached)", res, err, f.db.Calls())
	}
	f.db.Reset()
	if res, err := other.Do(ctx, req("alice", "k1", `{}`), ok201("x")); err != nil || !res.Replayed || f.db.Total() != 0 {
		t.Fatalf("second replay: %+v %v with %v calls, want it from the cache", res, err, f.db.Calls())
	}
}

// What the cache answers is the caller's own: changing a response that Do
// returned (the first one, or a replay from the cache) changes no later
// replay, and two replays share nothing a caller may write to.
func TestCacheAnswersAreTheCallersOwn(t *testing.T) {
	f := newFixture(t, withCache(10, 1<<16))
	ctx := context.Background()
	work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 201, Header: map[string]string{"X-A": "1"}, Cookies: []string{"c=1"}, Body: []byte("first")}, nil
	}
	spoil := func(r *idem.Response) {
		r.Header["X-A"] = "spoilt"
		r.Cookies[0] = "spoilt"
		r.Body[0] = 'X'
	}
	for _, do := range []func(context.Context, idem.Request, idem.Work) (idem.Result, error){f.store.Do, f.store.DoAtomic} {
		key := "k" + time.Now().Format("150405.000000")
		first, err := do(ctx, req("alice", key, `{}`), work)
		if err != nil {
			t.Fatal(err)
		}
		spoil(&first.Response)
		for i := range 2 {
			res, err := do(ctx, req("alice", key, `{}`), work)
			if err != nil || !res.Replayed || res.Response.Header["X-A"] != "1" || res.Response.Cookies[0] != "c=1" || string(res.Response.Body) != "first" {
				t.Fatalf("replay %d after the caller changed the answer before it = %+v %v, want the stored response", i, res, err)
			}
			spoil(&res.Response)
		}
	}
}

// The cache honours expires_at and its bounds on entries and bytes.
func TestCacheIsBoundedAndExpires(t *testing.T) {
	f := newFixture(t, withCache(2, 1<<20))
	ctx := context.Background()
	for _, k := range []string{"k1", "k2", "k3"} {
		f.store.Do(ctx, req("alice", k, `{}`), ok201(k))
	}
	f.db.Reset()
	f.store.Do(ctx, req("alice", "k1", `{}`), ok201("x")) // evicted by k3: read from the table
	if f.db.Total() != 1 {
		t.Fatalf("an evicted entry cost %v calls, want 1", f.db.Calls())
	}
	f.clock.Advance(idem.MinTTL + time.Hour) // every record expired
	f.db.Reset()
	if res, _ := f.store.Do(ctx, req("alice", "k1", `{}`), ok201("anew")); res.Replayed || string(res.Response.Body) != "anew" || f.db.Total() == 0 {
		t.Fatalf("after expires_at: %+v with %v calls, want the work run anew", res, f.db.Calls())
	}

	small := newFixture(t, withCache(100, 300))
	big := strings.Repeat("b", 200)
	small.store.Do(ctx, req("alice", "a", `{}`), ok201(big))
	small.store.Do(ctx, req("alice", "b", `{}`), ok201(big)) // over 300 bytes with a: a goes
	small.db.Reset()
	small.store.Do(ctx, req("alice", "b", `{}`), ok201("x"))
	if small.db.Total() != 0 {
		t.Fatalf("the newest entry cost %v calls, want 0", small.db.Calls())
	}
	small.store.Do(ctx, req("alice", "a", `{}`), ok201("x"))
	if small.db.Total() != 1 {
		t.Fatalf("an entry past the byte bound cost %v calls, want 1 (evicted)", small.db.Calls())
	}
}

// The cache serves every front door: a replay from it is the stored answer
// (marked replayed by an HTTP door) and another request under the key its
// 422 (Function's ErrFingerprintMismatch), neither with a DynamoDB call.
func TestCacheBehindEveryDoor(t *testing.T) {
	for _, d := range doorRows() {
		t.Run(d.name, func(t *testing.T) {
			f := newFixture(t, withCache(10, 1<<16))
			var runs atomic.Int32
			call := d.make(f.store, func(ctx context.Context, scope, key string, body []byte) (int, string) {
				return 201, "made " + strconv.Itoa(int(runs.Add(1)))
			})
			if first, err := call(k1); err != nil || first.status != 201 || first.body != "made 1" {
				t.Fatalf("first = %+v %v", first, err)
			}
			f.db.Reset()
			again, err := call(k1)
			if err != nil || again.status != 201 || again.body != "made 1" || (d.fn == nil && again.header[idem.HeaderReplayed] != "true") || f.db.Total() != 0 {
				t.Fatalf("cached replay = %+v %v with %v DynamoDB calls, want the first answer and none", again, err, f.db.Calls())
			}
			other, err := call(doorCall{k1.scope, k1.keys, `{"a":2}`})
			if d.fn != nil && !errors.Is(err, idem.ErrFingerprintMismatch) {
				t.Fatalf("another request under a cached key = %v, want ErrFingerprintMismatch", err)
			}
			if d.fn == nil {
				checkProblem(t, other.status, other.header["Content-Type"], []byte(other.body))
				if other.status != 422 || !strings.Contains(other.body, `"code":"idempotency_key_reused"`) {
					t.Fatalf("another request under a cached key = %+v, want 422", other)
				}
			}
			if f.db.Total() != 0 || runs.Load() != 1 {
				t.Fatalf("the cached 422 cost %v DynamoDB calls and the handler ran %d times, want none and once", f.db.Calls(), runs.Load())
			}
		})
	}
}
