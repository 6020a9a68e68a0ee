package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
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
	for _, do := range []func(context.Context, idem.Request, idem.Work) (idem.Result, error){f.Store.Do, f.Store.DoAtomic} {
		key := "k" + time.Now().Format("150405.000000")
		if _, err := do(ctx, req("alice", key, `{"a":1}`), ok201("first")); err != nil {
			t.Fatal(err)
		}
		f.DB.Reset()
		res, err := do(ctx, req("alice", key, `{"a":1}`), ok201("second"))
		if err != nil || !res.Replayed || string(res.Response.Body) != "first" || f.DB.Total() != 0 {
			t.Fatalf("cached replay = %+v %v with %v DynamoDB calls, want the first response and none", res, err, f.DB.Calls())
		}
		if _, err := do(ctx, req("alice", key, `{"a":2}`), ok201("other")); !errors.Is(err, idem.ErrFingerprintMismatch) || f.DB.Total() != 0 {
			t.Fatalf("another request under a cached key = %v with %v calls, want the 422 and none", err, f.DB.Calls())
		}
	}
	// Another caller's same key is not the cached one.
	if res, err := f.Store.Do(ctx, req("bob", "k1", `{"a":1}`), ok201("bob")); err != nil || res.Replayed {
		t.Fatalf("bob's k1 = %+v %v, want his own run", res, err)
	}
}

// A replay read from the table is cached too; an in-progress record never is.
func TestCacheKeepsOnlyCompletedRecords(t *testing.T) {
	f := newFixture(t, func(o *idem.Options) { o.Lease = 8 * time.Second })
	other := f.NewStore(withCache(100, 1<<20)) // another execution environment
	ctx := context.Background()
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var heldErr error
	go func() {
		_, heldErr = f.Store.Do(ctx, req("alice", "k1", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
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
	if heldErr != nil {
		t.Fatalf("the holder: %v", heldErr)
	}
	f.DB.Reset()
	if res, err := other.Do(ctx, req("alice", "k1", `{}`), ok201("x")); err != nil || string(res.Response.Body) != "done" || f.DB.Total() != 1 {
		t.Fatalf("after completion: %+v %v with %v calls, want the stored response read once (the 409 was not cached)", res, err, f.DB.Calls())
	}
	f.DB.Reset()
	if res, err := other.Do(ctx, req("alice", "k1", `{}`), ok201("x")); err != nil || !res.Replayed || f.DB.Total() != 0 {
		t.Fatalf("second replay: %+v %v with %v calls, want it from the cache", res, err, f.DB.Calls())
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
		if len(r.Cookies) > 0 { // the first answer's only
			r.Cookies[0] = "spoilt"
		}
		r.Body[0] = 'X'
	}
	for _, do := range []func(context.Context, idem.Request, idem.Work) (idem.Result, error){f.Store.Do, f.Store.DoAtomic} {
		key := "k" + time.Now().Format("150405.000000")
		first, err := do(ctx, req("alice", key, `{}`), work)
		if err != nil {
			t.Fatal(err)
		}
		spoil(&first.Response)
		for i := range 2 {
			res, err := do(ctx, req("alice", key, `{}`), work)
			if err != nil || !res.Replayed || res.Response.Header["X-A"] != "1" || res.Response.Cookies != nil || string(res.Response.Body) != "first" {
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
		if _, err := f.Store.Do(ctx, req("alice", k, `{}`), ok201(k)); err != nil {
			t.Fatal(err)
		}
	}
	f.DB.Reset()
	if res, err := f.Store.Do(ctx, req("alice", "k1", `{}`), ok201("x")); err != nil || !res.Replayed || f.DB.Total() != 1 { // evicted by k3: read from the table
		t.Fatalf("an evicted entry: %+v %v with %v calls, want a replay read once", res, err, f.DB.Calls())
	}
	f.Clock.Advance(idem.MinTTL + time.Hour) // every record expired
	f.DB.Reset()
	if res, _ := f.Store.Do(ctx, req("alice", "k1", `{}`), ok201("anew")); res.Replayed || string(res.Response.Body) != "anew" || f.DB.Total() == 0 {
		t.Fatalf("after expires_at: %+v with %v calls, want the work run anew", res, f.DB.Calls())
	}

	small := newFixture(t, withCache(100, 300))
	big := strings.Repeat("b", 200)
	for _, k := range []string{"a", "b"} { // over 300 bytes with a: a goes
		if _, err := small.Store.Do(ctx, req("alice", k, `{}`), ok201(big)); err != nil {
			t.Fatal(err)
		}
	}
	small.DB.Reset()
	if res, err := small.Store.Do(ctx, req("alice", "b", `{}`), ok201("x")); err != nil || !res.Replayed || small.DB.Total() != 0 {
		t.Fatalf("the newest entry: %+v %v with %v calls, want a replay from the cache", res, err, small.DB.Calls())
	}
	if res, err := small.Store.Do(ctx, req("alice", "a", `{}`), ok201("x")); err != nil || !res.Replayed || small.DB.Total() != 1 {
		t.Fatalf("an entry past the byte bound: %+v %v with %v calls, want a replay read once (evicted)", res, err, small.DB.Calls())
	}
}

// TestTheCacheKeepsScopesApart: the execution environment's cache answers
// for (scope, key), as the table does, never for the key alone: bob's k1
// under alice's body and carol's under another each run their own work,
// never get alice's stored response nor a 422; the same after a Delete
// and after the records expired (testbed.ScopePlan). On Do and DoAtomic.
func TestTheCacheKeepsScopesApart(t *testing.T) {
	for _, path := range []string{"Do", "DoAtomic"} {
		t.Run(path, func(t *testing.T) {
			f := newFixture(t, withCache(10, 1<<16))
			do := f.Store.Do
			if path == "DoAtomic" {
				do = f.Store.DoAtomic
			}
			var plan testbed.ScopePlan
			plan.Run(f.Fixture, func(scope, body string) (string, error) {
				res, err := do(context.Background(), req(scope, "k1", body), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
					return idem.Response{StatusCode: 201, Body: []byte(plan.Work(scope))}, nil
				})
				return string(res.Response.Body), err
			})
		})
	}
}
