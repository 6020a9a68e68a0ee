package idem_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// A ConflictFunc's 5xx is not stored either: a final 5xx is never stored,
// on every door; the handler runs again on the retry (it was stored and
// replayed forever).
func TestAConflictFuncs5xxIsNeverStored(t *testing.T) {
	for _, status := range []int{500, 503} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			f := newFixture(t)
			if _, err := f.Store.Do(context.Background(), req("alice", "pre", `{}`), f.createOrder("alice", "o1", nil)); err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			h := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
				runs.Add(1)
				tx.Add(f.OrderPut("alice", "o1", "again"), func(map[string]types.AttributeValue) (idem.Response, error) {
					return idem.Response{StatusCode: status, Body: []byte("order store busy, retry")}, nil
				})
				return idem.Response{StatusCode: 201}, nil
			})
			for i := 1; i <= 2; i++ {
				r, _ := h(context.Background(), testbed.APIRequest("alice", map[string]string{"idempotency-key": "k2"}, `{}`))
				if r.StatusCode != status || r.Headers[idemlambda.HeaderReplayed] != "" || runs.Load() != int32(i) {
					t.Fatalf("call %d: %d %q replayed=%q after %d runs; want the conflict's %d, not stored, the handler run again", i, r.StatusCode, r.Body, r.Headers[idemlambda.HeaderReplayed], runs.Load(), status)
				}
			}
			if str(f.Record("alice", "k2"), "status") == "COMPLETED" {
				t.Fatalf("a %d decided by the ConflictFunc was stored as COMPLETED; runs=%d", status, runs.Load())
			}
		})
	}
}

// Two actions on one item are refused by DynamoDB with a ValidationException;
// the library refuses them first, with ErrInvalidWrite, before any write, on
// both paths, and Do lapses its claim (it does not answer "unknown, retry").
func TestTwoWritesToOneItemAreRefusedBeforeAnyWrite(t *testing.T) {
	cases := []struct {
		name   string
		writes func(f *fixture) []types.TransactWriteItem
	}{
		{"two updates", func(f *fixture) []types.TransactWriteItem {
			return []types.TransactWriteItem{f.orderUpdate("alice", "o1"), f.orderUpdate("alice", "o1")}
		}},
		{"a put and an update", func(f *fixture) []types.TransactWriteItem {
			return []types.TransactWriteItem{f.OrderPut("alice", "o1", "n"), f.orderUpdate("alice", "o1")}
		}},
		{"a write to the idempotency record itself", func(f *fixture) []types.TransactWriteItem {
			return []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{
				TableName:           aws.String(f.Table),
				Key:                 map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: idem.RecordPK("alice", "k1")}},
				ConditionExpression: aws.String("attribute_exists(pk)"),
			}}}
		}},
	}
	for _, tc := range cases {
		for _, path := range []string{"Do", "DoAtomic"} {
			t.Run(tc.name+"/"+path, func(t *testing.T) {
				f := newFixture(t)
				do := map[string]func(context.Context, idem.Request, idem.Work) (idem.Result, error){"Do": f.Store.Do, "DoAtomic": f.Store.DoAtomic}[path]
				r := req("alice", "k1", `{}`)
				_, err := do(context.Background(), r, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
					for _, w := range tc.writes(f) {
						tx.Add(w, nil)
					}
					return idem.Response{StatusCode: 201}, nil
				})
				if !errors.Is(err, idem.ErrInvalidWrite) {
					t.Fatalf("err = %v, want ErrInvalidWrite", err)
				}
				if f.DB.Get("TransactWriteItems") != 0 || f.Order("alice", "o1") != nil {
					t.Fatalf("calls %v: a transaction was sent", f.DB.Calls())
				}
				if path == "Do" {
					f.Lapsed("alice", "k1", r.Fingerprint)
				} else if f.Record("alice", "k1") != nil {
					t.Fatal("DoAtomic wrote a record")
				}
			})
		}
	}
}

// Tx.Add asks for the old item on a copy of the action: an action the
// caller shares between operations is never written to (a data race, and a
// setting leaking into its other uses).
func TestTxAddLeavesTheCallersActionAlone(t *testing.T) {
	put := &types.Put{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "1"}}}
	var tx idem.Tx
	tx.Add(types.TransactWriteItem{Put: put}, func(map[string]types.AttributeValue) (idem.Response, error) { return idem.Response{}, nil })
	if put.ReturnValuesOnConditionCheckFailure != "" {
		t.Fatalf("the caller's put was changed: %q", put.ReturnValuesOnConditionCheckFailure)
	}
}

// orderUpdate is a business write naming its key.
func (f *fixture) orderUpdate(scope, id string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(f.Business),
		Key:                       map[string]types.AttributeValue{"scope": &types.AttributeValueMemberS{Value: scope}, "order_id": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET note = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberS{Value: "again"}},
	}}
}
