package idem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// failingWork is a work that fails, and counts its runs.
func failingWork(runs *int) idem.Work {
	return func(context.Context, *idem.Tx) (idem.Response, error) {
		*runs++
		return idem.Response{}, errors.New("provider timed out")
	}
}

// A lapse that DynamoDB throttles is sent again: the same request's retry,
// sent at once after the failure, takes the key over and runs its work,
// instead of meeting a 409 for the rest of the lease.
func TestAThrottledLapseIsSentAgain(t *testing.T) {
	s := idemtest.NewStore(t, func(o *idem.Options) { o.Lease = 30 * time.Second })
	ctx := context.Background()
	r := idem.Request{Scope: "alice", Key: "k1", Fingerprint: "fp"}
	s.Faults.Inject(idemtest.Fault{Op: idemtest.UpdateItem, Kind: idemtest.Throttle, Times: 2})
	runs := 0
	if _, err := s.Do(ctx, r, failingWork(&runs)); err == nil || errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("first call: %v, want the work's error", err)
	}
	sent := s.Faults.Calls(idemtest.UpdateItem)
	if _, err := s.Do(ctx, r, failingWork(&runs)); errors.Is(err, idem.ErrInProgress) || runs != 2 {
		t.Fatalf("the retry at once: %v after %d runs; want the key taken over and its work run again", err, runs)
	}
	if sent != 3 {
		t.Fatalf("the lapse was sent %d times; want 3 (two throttled, one that lands)", sent)
	}
}

// A throttled lapse is sent again for a bounded time only: under a storm
// that outlasts it, the call still answers, within the release's bound
// (5 s) and a margin, and the lease is left to run out.
func TestAThrottledLapseGivesUpWithinItsBound(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the release's 5 s bound")
	}
	s := idemtest.NewStore(t, func(o *idem.Options) { o.Lease = 30 * time.Second })
	s.Faults.Inject(idemtest.Fault{Op: idemtest.UpdateItem, Kind: idemtest.Throttle, For: time.Minute})
	runs := 0
	start := time.Now()
	_, err := s.Do(context.Background(), idem.Request{Scope: "alice", Key: "k1", Fingerprint: "fp"}, failingWork(&runs))
	if took := time.Since(start); err == nil || took > 5*time.Second+2*time.Second {
		t.Fatalf("answered %v after %v; want the work's error within the 5 s bound", err, took)
	}
	if s.Faults.Calls(idemtest.UpdateItem) < 2 {
		t.Fatalf("the lapse was sent %d times; want it sent again", s.Faults.Calls(idemtest.UpdateItem))
	}
}

// A lapse under a storm stops being sent once the call's context is done
// (after the release's first second): a caller that gave up is answered
// soon after.
func TestAThrottledLapseRespectsTheContext(t *testing.T) {
	s := idemtest.NewStore(t, func(o *idem.Options) { o.Lease = 30 * time.Second })
	s.Faults.Inject(idemtest.Fault{Op: idemtest.UpdateItem, Kind: idemtest.Throttle, For: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	start := time.Now()
	_, err := s.Do(ctx, idem.Request{Scope: "alice", Key: "k1", Fingerprint: "fp"}, func(context.Context, *idem.Tx) (idem.Response, error) {
		runs++
		cancel()
		return idem.Response{}, errors.New("gave up")
	})
	if took := time.Since(start); err == nil || took > time.Second+2*time.Second {
		t.Fatalf("answered %v after %v; want the work's error within the release's first second and a margin", err, took)
	}
	if s.Faults.Calls(idemtest.UpdateItem) < 2 {
		t.Fatalf("the lapse was sent %d times; want it sent again within its first second", s.Faults.Calls(idemtest.UpdateItem))
	}
}
