package idem_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkeys/idem/pkg/idem"
)

// orderUpdate is a business write naming its key.
func (f *fixture) orderUpdate(scope, id string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(f.Business),
		Key:                       map[string]types.AttributeValue{"scope": &types.AttributeValueMemberS{Value: scope}, "order_id": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET note = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberS{Value: "again"}},
	}}
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

// Two puts on one item cannot be told apart here (a put's key schema is
// the table's); DynamoDB's ValidationException for them is a definite
// refusal: ErrInvalidWrite and a lapsed claim, not an unknown outcome.
func TestValidationExceptionFromTheCommitIsADefiniteRefusal(t *testing.T) {
	f := newFixture(t)
	f.DB.Before = func(op string) error {
		if op == "TransactWriteItems" {
			return &smithy.GenericAPIError{Code: "ValidationException", Message: "Transaction request cannot include multiple operations on one item"}
		}
		return nil
	}
	r := req("alice", "k1", `{}`)
	_, err := f.Store.Do(context.Background(), r, f.createOrder("alice", "o1", nil))
	if !errors.Is(err, idem.ErrInvalidWrite) {
		t.Fatalf("err = %v, want ErrInvalidWrite", err)
	}
	if f.DB.Get("GetItem") != 0 {
		t.Fatalf("calls %v: a definite refusal was settled as an unknown outcome", f.DB.Calls())
	}
	f.Lapsed("alice", "k1", r.Fingerprint)
}

// A ConflictFunc's response passes the size check every other path makes,
// on DoAtomic as on Do: ErrResponseTooLarge, nothing stored.
func TestConflictResponsePastTheLimitIsRefused(t *testing.T) {
	for _, path := range []string{"Do", "DoAtomic"} {
		t.Run(path, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if _, err := f.Raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Business), Item: f.OrderPut("alice", "taken", "existing").Put.Item}); err != nil {
				t.Fatal(err)
			}
			do := map[string]func(context.Context, idem.Request, idem.Work) (idem.Result, error){"Do": f.Store.Do, "DoAtomic": f.Store.DoAtomic}[path]
			_, err := do(ctx, req("alice", "k1", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				tx.Add(f.OrderPut("alice", "taken", "new"), func(map[string]types.AttributeValue) (idem.Response, error) {
					return idem.Response{StatusCode: 409, Body: bytes.Repeat([]byte("x"), (400 << 10))}, nil
				})
				return idem.Response{StatusCode: 201}, nil
			})
			if !errors.Is(err, idem.ErrResponseTooLarge) {
				t.Fatalf("err = %v, want ErrResponseTooLarge", err)
			}
			if st := str(f.Record("alice", "k1"), "status"); st == "COMPLETED" {
				t.Fatal("an oversized response was stored")
			}
		})
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

// A lease as long as the shortest TTL could outlive its record.
func TestLeaseMustBeShorterThanTheTTL(t *testing.T) {
	_, err := idem.New(&dynamodb.Client{}, "table", func(o *idem.Options) { o.Lease = idem.MinTTL })
	if !errors.Is(err, idem.ErrInvalidOptions) {
		t.Fatalf("New with a 24h lease: %v, want ErrInvalidOptions", err)
	}
}
