package idem_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The Store's decisions and its conditions draw the same line: a record
// lives through the last second of its expires_at (the claim's condition
// takes it over only once expires_at < now, in seconds). A decision that
// drew the line a second early would claim where the condition refuses,
// and answer 409 to a retry it should have replayed.
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
