package idem_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

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
