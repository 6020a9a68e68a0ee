package idem_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
)

// The Store's decisions and its conditions draw the same lines: a record
// lives through the last second of its expires_at (the claim's condition
// takes it over only once expires_at < now, in seconds), and a lease lives
// until the millisecond of its lease_until (the takeover's condition needs
// lease_until <= now). A decision that drew either line a step early would
// claim where the condition refuses, and answer 409 to a retry it should
// have replayed or let take over.

func TestARecordLivesThroughItsLastSecond(t *testing.T) {
	f := newFixture(t)
	f.Clock.Advance(time.Second - time.Duration(f.Clock.Now().UnixNano())%time.Second) // a whole second
	ctx := context.Background()
	r := req("alice", "k1", `{}`)
	var runs atomic.Int32
	if _, err := f.Store.Do(ctx, r, f.createOrder("alice", "o1", &runs)); err != nil {
		t.Fatal(err)
	}
	f.Clock.Advance(24*time.Hour + 999*time.Millisecond) // the default TTL: now is expires_at's last millisecond
	res, err := f.Store.Do(ctx, r, f.createOrder("alice", "o1", &runs))
	if err != nil || !res.Replayed || runs.Load() != 1 {
		t.Fatalf("in expires_at's second: %+v, %v after %d runs; want the replay", res, err, runs.Load())
	}
	f.Clock.Advance(time.Millisecond) // expires_at < now
	res, err = f.Store.Do(ctx, r, f.createOrder("alice", "o2", &runs))
	if err != nil || res.Replayed || runs.Load() != 2 {
		t.Fatalf("the second after: %+v, %v after %d runs; want the key new again", res, err, runs.Load())
	}
}

func TestALeaseLivesUntilItsLastMillisecond(t *testing.T) {
	f := newFixture(t, func(o *idem.Options) { o.Lease = 30 * time.Second })
	f.Clock.Advance(time.Millisecond - time.Duration(f.Clock.Now().UnixNano())%time.Millisecond) // a whole millisecond
	ctx := context.Background()
	r := req("alice", "k1", `{}`)
	let := hold(t, f, r)
	var runs atomic.Int32
	f.Clock.Advance(30*time.Second - time.Millisecond) // lease_until's last millisecond but one
	if _, err := f.Store.Do(ctx, r, f.createOrder("alice", "o1", &runs)); !errors.Is(err, idem.ErrInProgress) || runs.Load() != 0 {
		t.Fatalf("a millisecond before lease_until: %v after %d runs; want ErrInProgress", err, runs.Load())
	}
	f.Clock.Advance(time.Millisecond) // lease_until <= now
	if res, err := f.Store.Do(ctx, r, f.createOrder("alice", "o1", &runs)); err != nil || res.Replayed || runs.Load() != 1 {
		t.Fatalf("at lease_until: %+v, %v after %d runs; want the retry to take over", res, err, runs.Load())
	}
	if err := let(); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("the holder past its lease: %v, want ErrLeaseLost", err)
	}
}

// hold claims r's key for a holder whose work waits until it is let go,
// and returns what lets it go and then answers the holder's error. A test
// that fails before letting it go lets it go as it ends.
func hold(t *testing.T, f *fixture, r idem.Request) (let func() error) {
	t.Helper()
	claimed, release, holder := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free)
	go func() {
		_, err := f.Store.Do(context.Background(), r, func(context.Context, *idem.Tx) (idem.Response, error) {
			close(claimed)
			<-release
			return idem.Response{StatusCode: 201}, nil
		})
		holder <- err
	}()
	<-claimed
	return func() error {
		free()
		return <-holder
	}
}
