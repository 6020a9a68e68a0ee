package idem_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

// newOrder is fast-path work: a fresh order id on every run, as a real
// handler would make, so that a response tells which run committed.
func (f *fixture) newOrder(scope string, runs *atomic.Int32) idem.Work {
	return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		if runs != nil {
			runs.Add(1)
		}
		id := "ord_" + rand.Text()[:10]
		tx.Add(f.OrderPut(scope, id, "atomic"), nil)
		return idem.Response{StatusCode: 201, Body: []byte(id)}, nil
	}
}

func (f *fixture) orders(scope string) int {
	f.T.Helper()
	out, err := f.Raw.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(f.Business),
		KeyConditionExpression:    aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "scope"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: scope}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return int(out.Count)
}

func TestAtomicFirstCallAndReplayCostOneCallEach(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first, err := f.Store.DoAtomic(ctx, req("alice", "k1", `{}`), f.newOrder("alice", nil))
	if err != nil || first.Replayed || first.Response.StatusCode != 201 {
		t.Fatalf("first = %+v, %v", first, err)
	}
	if f.DB.Total() != 1 || f.DB.Get("TransactWriteItems") != 1 {
		t.Fatalf("first call made %v, want one TransactWriteItems", f.DB.Calls())
	}
	if str(f.Record("alice", "k1"), "status") != "COMPLETED" || f.orders("alice") != 1 {
		t.Fatal("record not completed, or the order missing")
	}
	f.DB.Reset()
	again, err := f.Store.DoAtomic(ctx, req("alice", "k1", `{}`), f.newOrder("alice", nil))
	if err != nil || !again.Replayed || string(again.Response.Body) != string(first.Response.Body) {
		t.Fatalf("replay = %+v, %v; want %q replayed", again, err, first.Response.Body)
	}
	if f.DB.Total() != 1 {
		t.Fatalf("replay made %v, want one call", f.DB.Calls())
	}
	if f.orders("alice") != 1 {
		t.Fatal("the replay wrote an order")
	}
}

func TestAtomicRacersCommitOnce(t *testing.T) {
	f := newFixture(t)
	const n = 50
	results := make([]idem.Result, n)
	errs := make([]error, n)
	race(n, func(i int) {
		results[i], errs[i] = f.NewStore().DoAtomic(context.Background(), req("alice", "race", `{}`), f.newOrder("alice", nil))
	})
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if string(results[i].Response.Body) != string(results[0].Response.Body) {
			t.Fatalf("caller %d got %q, caller 0 %q: want one response for all", i, results[i].Response.Body, results[0].Response.Body)
		}
		if !results[i].Replayed {
			fresh++
		}
	}
	if fresh != 1 || f.orders("alice") != 1 {
		t.Fatalf("%d fresh answers and %d orders, want exactly one of each", fresh, f.orders("alice"))
	}
}

func TestAtomicRefusesAnotherRequestsKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.Store.DoAtomic(ctx, req("alice", "k1", `{"n":1}`), f.newOrder("alice", nil)); err != nil {
		t.Fatal(err)
	}
	_, err := f.Store.DoAtomic(ctx, req("alice", "k1", `{"n":2}`), f.newOrder("alice", nil))
	if !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("err = %v, want ErrFingerprintMismatch", err)
	}
	if f.orders("alice") != 1 {
		t.Fatal("the mismatched request wrote")
	}
}

func TestAtomicAndClaimThenCommitShareRecords(t *testing.T) {
	t.Run("in progress on the slow path is 409 on the fast one", func(t *testing.T) {
		f := newFixture(t)
		release := holdKey(t, f.Store, req("alice", "k1", `{}`))
		defer release()
		_, err := f.Store.DoAtomic(context.Background(), req("alice", "k1", `{}`), f.newOrder("alice", nil))
		if !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("err = %v, want ErrInProgress", err)
		}
		if f.orders("alice") != 0 {
			t.Fatal("the fast path wrote while the slow one held the key")
		}
	})
	t.Run("each replays what the other completed", func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		slow, _ := f.Store.Do(ctx, req("alice", "slow", `{}`), f.createOrder("alice", "o1", nil))
		fast, err := f.Store.DoAtomic(ctx, req("alice", "slow", `{}`), f.newOrder("alice", nil))
		if err != nil || !fast.Replayed || string(fast.Response.Body) != string(slow.Response.Body) {
			t.Fatalf("fast after slow = %+v, %v", fast, err)
		}
		first, _ := f.Store.DoAtomic(ctx, req("alice", "fast", `{}`), f.newOrder("alice", nil))
		second, err := f.Store.Do(ctx, req("alice", "fast", `{}`), f.createOrder("alice", "o2", nil))
		if err != nil || !second.Replayed || string(second.Response.Body) != string(first.Response.Body) {
			t.Fatalf("slow after fast = %+v, %v", second, err)
		}
		if f.orders("alice") != 2 {
			t.Fatalf("%d orders, want one per key", f.orders("alice"))
		}
	})
	t.Run("a lapsed slow lease is taken over and its holder fenced", func(t *testing.T) {
		f := newFixture(t, func(o *idem.Options) { o.Lease = 10 * time.Second })
		ctx := context.Background()
		stalled, resume, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := f.Store.Do(ctx, req("alice", "k1", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				close(stalled)
				<-resume
				tx.Add(f.OrderPut("alice", "slow-order", "slow"), nil)
				return idem.Response{StatusCode: 201}, nil
			})
			done <- err
		}()
		<-stalled
		f.Clock.Advance(11 * time.Second)
		res, err := f.NewStore().DoAtomic(ctx, req("alice", "k1", `{}`), f.newOrder("alice", nil))
		if err != nil || res.Replayed {
			t.Fatalf("fast takeover = %+v, %v", res, err)
		}
		close(resume)
		if err := <-done; !errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("slow holder: %v, want ErrLeaseLost", err)
		}
		if f.Order("alice", "slow-order") != nil || f.orders("alice") != 1 {
			t.Fatal("the fenced holder's write landed, or the taker's is missing")
		}
	})
}

func TestAtomicBusinessConflictStoresTheDecidedResponse(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.Raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Business), Item: f.OrderPut("alice", "taken", "existing").Put.Item}); err != nil {
		t.Fatal(err)
	}
	work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(f.OrderPut("alice", "taken", "new"), func(old map[string]types.AttributeValue) (idem.Response, error) {
			return idem.Response{StatusCode: 409, Body: []byte("taken by " + str(old, "note"))}, nil
		})
		return idem.Response{StatusCode: 201}, nil
	}
	res, err := f.Store.DoAtomic(ctx, req("alice", "k1", `{}`), work)
	if err != nil || res.Response.StatusCode != 409 || string(res.Response.Body) != "taken by existing" {
		t.Fatalf("got %+v, %v", res, err)
	}
	again, err := f.Store.DoAtomic(ctx, req("alice", "k1", `{}`), work)
	if err != nil || !again.Replayed || again.Response.StatusCode != 409 {
		t.Fatalf("replay = %+v, %v", again, err)
	}
}

// TestAtomicCommitWhoseAnswerWasLostSucceeds: DoAtomic's transaction lands
// and is sent again, with its ClientRequestToken (the engine answers the
// first one's success) or without it (cancelled by its own record, which the
// commit reads as its own); either way the holder answers its own 201.
func TestAtomicCommitWhoseAnswerWasLostSucceeds(t *testing.T) {
	for _, keepToken := range []bool{true, false} {
		t.Run(fmt.Sprintf("token kept %v", keepToken), func(t *testing.T) {
			f := newFixture(t)
			f.DB.AfterTx = func(ctx context.Context, in *dynamodb.TransactWriteItemsInput, out *dynamodb.TransactWriteItemsOutput, err error) (*dynamodb.TransactWriteItemsOutput, error) {
				if err != nil {
					return out, err
				}
				again := *in
				if !keepToken {
					again.ClientRequestToken = nil
				}
				out, err = f.Raw.TransactWriteItems(ctx, &again)
				if canceled := new(types.TransactionCanceledException); keepToken != (err == nil) || !keepToken && !errors.As(err, &canceled) {
					t.Errorf("resent, token kept %v: %v", keepToken, err)
				}
				return out, err
			}
			res, err := f.Store.DoAtomic(context.Background(), req("alice", "k1", `{}`), f.newOrder("alice", nil))
			if err != nil || res.Replayed || res.Response.StatusCode != 201 {
				t.Fatalf("got %+v, %v; want this commit's own 201", res, err)
			}
		})
	}
}
