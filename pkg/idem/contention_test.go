package idem_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

// A call that loses its claim again and again (each time it finds a lapsed
// lease it may take over, and each takeover loses to another) answers in
// progress after a few claims (four today): its contention is bounded,
// however busy the key.
func TestContentionForAKeyIsBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := req("alice", "k1", `{}`)
	failed := errors.New("provider timed out")
	if _, err := f.Store.Do(ctx, r, func(context.Context, *idem.Tx) (idem.Response, error) { return idem.Response{}, failed }); !errors.Is(err, failed) {
		t.Fatalf("setup: %v, want the work's error (a lapsed lease)", err)
	}
	lapsed := f.Record("alice", "k1")
	var claims atomic.Int32
	f.DB.Before = func(op string) error {
		if op != "PutItem" {
			return nil
		}
		if claims.Add(1) > 8 {
			return fmt.Errorf("claim %d: the call claims on and on", claims.Load())
		}
		return &types.ConditionalCheckFailedException{Message: aws.String("lost to another taker"), Item: lapsed}
	}
	var runs atomic.Int32
	_, err := f.Store.Do(ctx, r, f.createOrder("alice", "o1", &runs))
	if !errors.Is(err, idem.ErrInProgress) || claims.Load() > 4 || runs.Load() != 0 {
		t.Fatalf("err = %v after %d claims and %d runs; want ErrInProgress within 4 claims, no run", err, claims.Load(), runs.Load())
	}
}

// A cancelled transaction whose exception carries no reasons (an engine or
// a proxy in between that drops them) committed nothing: the call fails
// and lapses its key, and never reads a reason that is not there.
func TestACancellationWithoutItsReasonsLapses(t *testing.T) {
	f := newFixture(t)
	f.DB.Before = func(op string) error {
		if op == "TransactWriteItems" {
			return &types.TransactionCanceledException{Message: aws.String("cancelled")}
		}
		return nil
	}
	r := req("alice", "k1", `{}`)
	if _, err := f.Store.Do(context.Background(), r, f.createOrder("alice", "o1", nil)); err == nil {
		t.Fatal("a cancelled commit succeeded")
	}
	if f.Order("alice", "o1") != nil {
		t.Fatal("a cancelled transaction left a write")
	}
	f.Lapsed("alice", "k1", r.Fingerprint)
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
	}{{0, 30 * time.Second}, {10500 * time.Millisecond, 20 * time.Second}, {9500 * time.Millisecond, 10 * time.Second}} {
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
