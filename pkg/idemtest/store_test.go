package idemtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// The clock starts at the real time, which DynamoDB Local's TTL runs on,
// and moves only when told.
func TestTheClockStartsAtTheRealTimeAndMovesWhenTold(t *testing.T) {
	before := time.Now()
	c := idemtest.NewClock()
	if now := c.Now(); now.Before(before) || now.After(time.Now()) {
		t.Fatalf("the clock starts at %v, not the real time", now)
	}
	start := c.Now()
	time.Sleep(10 * time.Millisecond)
	if !c.Now().Equal(start) {
		t.Fatal("the clock moved by itself")
	}
	c.Advance(time.Hour)
	if got := c.Now().Sub(start); got != time.Hour {
		t.Fatalf("Advance(1h) moved the clock by %v", got)
	}
}

// NewStore's options reach the Stores Another returns, before their own;
// both write the Store's clock.
func TestAnotherStoreKeepsNewStoresOptionsAndClock(t *testing.T) {
	s := idemtest.NewStore(t, func(o *idem.Options) { o.Lease = 10 * time.Second })
	s.Clock.Advance(time.Minute) // records written from now on are a minute ahead of the real time
	ctx := context.Background()
	leaseOf := func(store *idem.Store, key string) time.Duration {
		var lease time.Duration
		_, err := store.Do(ctx, idem.Request{Scope: "alice", Key: key, Fingerprint: "f"}, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			rec, err := s.Inspect(ctx, "alice", key)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.CreatedAt.Equal(s.Clock.Now().Truncate(time.Millisecond)) {
				t.Errorf("created at %v, want the Store's clock, %v", rec.CreatedAt, s.Clock.Now())
			}
			lease = rec.LeaseUntil.Sub(rec.CreatedAt)
			return idem.Response{StatusCode: 200}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return lease
	}
	if got := leaseOf(s.Another(), "k1"); got != 10*time.Second {
		t.Errorf("Another() claimed a %v lease, want NewStore's 10s", got)
	}
	if got := leaseOf(s.Another(func(o *idem.Options) { o.Lease = 20 * time.Second }), "k2"); got != 20*time.Second {
		t.Errorf("Another(20s) claimed a %v lease, want its own 20s", got)
	}
	if s.Faults.Calls(idemtest.PutItem) < 2 {
		t.Errorf("Another's calls did not go through the Store's Faults: %d PutItem", s.Faults.Calls(idemtest.PutItem))
	}
}
