package idem_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/pkg/idem"
)

// The Store's decisions and its conditions draw the same line: a lease
// lives until the millisecond of its lease_until (the takeover's condition
// needs lease_until <= now). A decision that drew the line a step early
// would take over where the condition refuses, and answer 409 to a retry
// it should have let take over.
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

// The model assumes a record outlives any holder of it. A lease
// longer than half the TTL leaves a holder that overruns it less than half
// the TTL before the record expires under it and the key starts a new life.
func TestLeaseAtMostHalfTheTTL(t *testing.T) {
	cases := []struct {
		lease, ttl time.Duration
		ok         bool
	}{
		{12 * time.Hour, idem.MinTTL, true},
		{idem.MinTTL, idem.MinTTL, false}, // a lease as long as the shortest TTL could outlive its record
		{12*time.Hour + time.Millisecond, idem.MinTTL, false},
		{20 * time.Hour, idem.MinTTL, false},
		{20 * time.Hour, 48 * time.Hour, true},
	}
	for _, tc := range cases {
		_, err := idem.New(&dynamodb.Client{}, "table", func(o *idem.Options) { o.Lease, o.TTL = tc.lease, tc.ttl })
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, idem.ErrInvalidOptions)) {
			t.Errorf("New(lease %v, TTL %v) = %v, want ok=%v", tc.lease, tc.ttl, err, tc.ok)
		}
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

// A 409's Retry-After is the lease left on the record, rounded up to a
// whole second, so that a client that honours it comes back once the lease
// is over, not a second later than it must, nor into the same lease.
func TestRetryAfterIsTheLeaseLeftRoundedUp(t *testing.T) {
	f := newFixture(t, func(o *idem.Options) { o.Lease = 30 * time.Second })
	f.Clock.Advance(time.Second - time.Duration(f.Clock.Now().UnixNano())%time.Second) // a whole second: lease_until is too
	ctx := context.Background()
	r := req("alice", "k1", `{}`)
	let := hold(t, f, r)
	for _, c := range []struct {
		after, want time.Duration
	}{{0, 30 * time.Second}, {10500 * time.Millisecond, 20 * time.Second}, {9500 * time.Millisecond, 10 * time.Second},
		{8600 * time.Millisecond, 2 * time.Second}} { // 1.4 s left: 2 s, not 1, or the client comes back into the same lease
		f.Clock.Advance(c.after)
		_, err := f.Store.Do(ctx, r, ok)
		var busy *idem.InProgressError
		if !errors.As(err, &busy) || busy.RetryAfter != c.want {
			t.Errorf("%v after the claim: %v, want Retry-After %v", c.after, err, c.want)
		}
	}
	if err := let(); err != nil {
		t.Fatalf("the holder: %v", err)
	}
}
