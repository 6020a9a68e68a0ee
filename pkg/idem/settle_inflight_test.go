package idem_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// The calls that settle an unknown outcome, and the sends that land
// after them. Each case is a path of pkg/idem/model/idem.pml.

// inFlightTx is the engine with one transaction in flight: its first
// TransactWriteItems reaches the engine only after delay, its client told
// nothing but a timeout; until it lands, a single-item write on the record
// meets it, as on DynamoDB, with TransactionConflictException.
type inFlightTx struct {
	idem.DynamoDBAPI
	delay  time.Duration
	once   sync.Once
	landed chan struct{}
}

func newInFlightTx(db idem.DynamoDBAPI, delay time.Duration) *inFlightTx {
	return &inFlightTx{DynamoDBAPI: db, delay: delay, landed: make(chan struct{})}
}

func (e *inFlightTx) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	first := false
	e.once.Do(func() { first = true })
	if !first {
		return e.DynamoDBAPI.TransactWriteItems(ctx, in, o...)
	}
	go func() { //nolint:gosec // G118: the send lands after its caller has gone, as one in flight at DynamoDB does
		defer close(e.landed)
		time.Sleep(e.delay)
		_, _ = e.DynamoDBAPI.TransactWriteItems(context.Background(), in, o...) // its answer is the one lost
	}()
	return nil, errors.New("read tcp 127.0.0.1:8000: i/o timeout")
}

func (e *inFlightTx) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	select {
	case <-e.landed:
		return e.DynamoDBAPI.UpdateItem(ctx, in, o...)
	default:
		return nil, &types.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}
	}
}

// The settling lapse meets the commit still in flight, which
// lands after the lapse's bounded conflict retries. Do used to answer
// "commit outcome unknown" and the commit landed after; now settle keeps
// lapsing until the transaction has resolved, and answers what happened:
// the committed response. (model: the settling lapse that never lands is
// the fault branch of idem.pml's settle; "told_failed" checks that a
// definite failure is never followed by its commit.)
func TestSettleWaitsOutTheCommitInFlight(t *testing.T) {
	f := newFixture(t)
	db := newInFlightTx(f.DB, 300*time.Millisecond)
	s, err := idem.New(db, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now })
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	res, err := s.Do(context.Background(), req("alice", "k1", `{}`), f.createOrder("alice", "o1", &runs))
	<-db.landed
	if err != nil || res.Response.StatusCode != 201 || runs.Load() != 1 {
		t.Fatalf("Do = %+v, %v after %d runs; want the committed 201 (the commit landed)", res, err, runs.Load())
	}
	if f.Order("alice", "o1") == nil || str(f.Record("alice", "k1"), "status") != "COMPLETED" {
		t.Fatal("the answer says committed, the table does not")
	}
}

// Every send of a claim is in flight and lands after the claim
// was handed back. The hand-back used to be a lapse, which found no record
// and changed nothing: the late claim then left a live lease nobody held,
// and the request's own retry was answered 409 for the whole lease. Now the
// hand-back puts the claimed record already lapsed, under the claim's own
// condition, so the late claim fails its condition. (model: idem.pml's
// claim in flight, "cinflight"; its negative control HANDBACK_AS_LAPSE.)
func TestLateClaimAfterItsHandBackNeverLands(t *testing.T) {
	lease := 30 * time.Second
	f := newFixture(t, func(o *idem.Options) { o.Lease = lease })
	proxy, store := f.proxied(func(o *idem.Options) { o.Lease = lease })
	proxy.Inject(faultproxy.Fault{Op: "PutItem", Kind: faultproxy.LandLate, Times: 3, Delay: 300 * time.Millisecond})
	r := req("alice", "k1", `{}`)
	var runs atomic.Int32
	if _, err := store.Do(context.Background(), r, f.createOrder("alice", "o1", &runs)); err == nil || errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("first call: %v, want the claim's failure", err)
	}
	proxy.Landed() // the claim's three sends reach the engine now
	mustInject(t, proxy, faultproxy.LandLate, 3)
	f.Lapsed("alice", "k1", r.Fingerprint)
	res, err := store.Do(context.Background(), r, f.createOrder("alice", "o1", &runs))
	if err != nil || res.Response.StatusCode != 201 || runs.Load() != 1 {
		t.Fatalf("retry = %+v, %v after %d runs; want it to take over at once and run", res, err, runs.Load())
	}
}

// DoAtomic's transaction is in flight and lands after its
// settling. The settling was a lapse, which can never lapse a record put
// straight as completed: it found no record, answered "outcome unknown, the
// record is gone", and the transaction landed after. Now DoAtomic hands the
// claim back as Do's claim does: the late transaction fails its condition,
// the answer is a definite failure, and the retry takes over and commits
// once. (model: idem.pml's AReq, its negative control ATOMIC_SETTLE_LAPSE.)
func TestAtomicLateCommitAfterItsSettlingNeverLands(t *testing.T) {
	f := newFixture(t)
	proxy, store := f.proxied()
	proxy.Inject(faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.LandLate, Times: 3, Delay: 300 * time.Millisecond})
	r := req("alice", "k1", `{}`)
	var runs atomic.Int32
	_, err := store.DoAtomic(context.Background(), r, f.newOrder("alice", &runs))
	proxy.Landed()
	mustInject(t, proxy, faultproxy.LandLate, 3)
	if err == nil || strings.Contains(err.Error(), "unknown") {
		t.Fatalf("DoAtomic = %v, want a definite failure", err)
	}
	if n := f.orders("alice"); n != 0 {
		t.Fatalf("%d orders written after DoAtomic answered that nothing was", n)
	}
	f.Lapsed("alice", "k1", r.Fingerprint)
	res, err := store.DoAtomic(context.Background(), r, f.newOrder("alice", &runs))
	if err != nil || res.Response.StatusCode != 201 || res.Replayed || f.orders("alice") != 1 {
		t.Fatalf("retry = %+v, %v, %d orders; want it to take over and commit once", res, err, f.orders("alice"))
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

// DoAtomic's transaction lands and every answer is lost: the hand-back
// fails its condition on the record completed under the commit's own
// token, which is the answer at once. (resolve stops at a failed
// condition: it used to send the hand-back again until settleFor ran out.)
func TestAtomicUnknownCommitThatLandedIsSettledAtOnce(t *testing.T) {
	f := newFixture(t)
	proxy, store := f.proxied()
	proxy.Inject(faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.CommitThenDrop, Times: 3})
	start := time.Now()
	res, err := store.DoAtomic(context.Background(), req("alice", "k1", `{}`), f.newOrder("alice", nil))
	took := time.Since(start)
	mustInject(t, proxy, faultproxy.CommitThenDrop, 3)
	if err != nil || res.Response.StatusCode != 201 || f.orders("alice") != 1 {
		t.Fatalf("DoAtomic = %+v, %v, %d orders; want the committed 201", res, err, f.orders("alice"))
	}
	if took > 5*time.Second {
		t.Fatalf("DoAtomic took %v: the hand-back was sent again past its answer", took)
	}
}
