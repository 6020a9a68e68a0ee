package idem_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkeys/idem/pkg/idem"
)

// TestKeylessCommitAnswersTheWriteThatFailed holds Store.Commit's go doc
// for a write whose condition fails: with a ConflictFunc, that write's
// function answers, seeing the item that stood in the way, and nothing is
// written; a 5xx it returns is an error that carries it (as on Do's path:
// a 5xx is no answer); without one, the error is ErrWriteConditionFailed,
// naming the write. The failing write is the second of three, so that a
// reason read from the wrong write, or the first write's function asked,
// shows; and the first, whose index 0 is a write's too.
func TestKeylessCommitAnswersTheWriteThatFailed(t *testing.T) {
	cases := []struct {
		name    string
		failing int // the write whose item stands already
		answer  int // its ConflictFunc's status; 0: no ConflictFunc
		check   func(*idem.Response, error) string
	}{
		{"a 409 from its ConflictFunc", 1, 409, func(r *idem.Response, err error) string {
			if err != nil || r == nil || r.StatusCode != 409 || string(r.Body) != "held by existing" {
				return "want the ConflictFunc's 409, built from the item in the way"
			}
			return ""
		}},
		{"a 499, the last status stored", 1, 499, func(r *idem.Response, err error) string {
			if err != nil || r == nil || r.StatusCode != 499 {
				return "want the ConflictFunc's 499 as an answer"
			}
			return ""
		}},
		{"a 500 from its ConflictFunc", 1, 500, func(r *idem.Response, err error) string {
			var unstored interface{ Response() idem.Response }
			if r != nil || !errors.As(err, &unstored) || unstored.Response().StatusCode != 500 {
				return "want no answer, an error that carries the 500"
			}
			return ""
		}},
		{"no ConflictFunc", 1, 0, func(r *idem.Response, err error) string {
			if r != nil || !errors.Is(err, idem.ErrWriteConditionFailed) || !strings.HasSuffix(err.Error(), "write 1") {
				return "want ErrWriteConditionFailed for write 1"
			}
			return ""
		}},
		{"no ConflictFunc, the first write", 0, 0, func(r *idem.Response, err error) string {
			if r != nil || !errors.Is(err, idem.ErrWriteConditionFailed) || !strings.HasSuffix(err.Error(), "write 0") {
				return "want ErrWriteConditionFailed for write 0"
			}
			return ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ids := []string{"o1", "o2", "o3"}
			var prior idem.Tx
			prior.Add(f.OrderPut("alice", ids[tc.failing], "existing"), nil)
			if _, err := f.Store.Commit(context.Background(), &prior); err != nil {
				t.Fatal(err)
			}
			asked := map[string]int{}
			conflict := func(name string, status int) idem.ConflictFunc {
				return func(old map[string]types.AttributeValue) (idem.Response, error) {
					asked[name]++
					note, _ := old["note"].(*types.AttributeValueMemberS)
					if note == nil {
						return idem.Response{}, errors.New("no item in the way")
					}
					return idem.Response{StatusCode: status, Body: []byte("held by " + note.Value)}, nil
				}
			}
			var tx idem.Tx
			for i, id := range ids {
				switch {
				case i != tc.failing:
					tx.Add(f.OrderPut("alice", id, "new"), conflict(id, 409))
				case tc.answer != 0:
					tx.Add(f.OrderPut("alice", id, "new"), conflict(id, tc.answer))
				default:
					tx.Add(f.OrderPut("alice", id, "new"), nil)
				}
			}
			r, err := f.Store.Commit(context.Background(), &tx)
			if why := tc.check(r, err); why != "" {
				t.Fatalf("Commit = %+v, %v: %s", r, err, why)
			}
			want := map[string]int{}
			if tc.answer != 0 {
				want[ids[tc.failing]] = 1
			}
			if !maps.Equal(asked, want) {
				t.Fatalf("ConflictFuncs asked %v, want %v", asked, want)
			}
			for i, id := range ids {
				if o := f.Order("alice", id); i != tc.failing && o != nil {
					t.Fatalf("%s, a write of the cancelled transaction, landed", id)
				}
			}
		})
	}
}

// TestAConflictFuncSeesTheItemInTheWayForEveryAction holds Tx.Add's go doc:
// with a ConflictFunc, the action asks DynamoDB for the item that failed
// its condition (ALL_OLD), whatever the action, so that the function sees
// it without another read. DynamoDB, and the local engine with it, return
// that item only when the action asked for it.
func TestAConflictFuncSeesTheItemInTheWayForEveryAction(t *testing.T) {
	f := newFixture(t)
	var prior idem.Tx
	prior.Add(f.OrderPut("alice", "o1", "existing"), nil)
	if _, err := f.Store.Commit(context.Background(), &prior); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"scope": &types.AttributeValueMemberS{Value: "alice"}, "order_id": &types.AttributeValueMemberS{Value: "o1"}}
	absent := aws.String("attribute_not_exists(order_id)")
	actions := map[string]types.TransactWriteItem{
		"Put": f.OrderPut("alice", "o1", "new"),
		"Update": {Update: &types.Update{TableName: aws.String(f.Business), Key: key, ConditionExpression: absent,
			UpdateExpression: aws.String("SET note = :n"), ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberS{Value: "new"}}}},
		"Delete":         {Delete: &types.Delete{TableName: aws.String(f.Business), Key: key, ConditionExpression: absent}},
		"ConditionCheck": {ConditionCheck: &types.ConditionCheck{TableName: aws.String(f.Business), Key: key, ConditionExpression: absent}},
	}
	for name, action := range actions {
		t.Run(name, func(t *testing.T) {
			var seen string
			var tx idem.Tx
			tx.Add(action, func(old map[string]types.AttributeValue) (idem.Response, error) {
				if note, ok := old["note"].(*types.AttributeValueMemberS); ok {
					seen = note.Value
				}
				return idem.Response{StatusCode: 409}, nil
			})
			r, err := f.Store.Commit(context.Background(), &tx)
			if err != nil || r == nil || r.StatusCode != 409 || seen != "existing" {
				t.Fatalf("Commit = %+v, %v, the ConflictFunc saw note %q; want its 409, having seen the item in the way", r, err, seen)
			}
		})
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
