package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamotest"
)

// The conformance tests hold the engine's answers to DynamoDB's documented
// ones, on the points pkg/idem's protocol reads: which action of a cancelled
// transaction failed, the old item a failed condition returns, a cancelled
// transaction leaving nothing behind, and a transaction resent with its
// ClientRequestToken. They pass on DynamoDB Local; an engine of one's own at
// DYNAMODB_ENDPOINT that fails one of them would let the protocol's tests
// pass or fail for the engine's reasons, not the code's.

type item = map[string]types.AttributeValue

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// conformance is one test's two tables: the idempotency table (hash key
// only) and the orders table (hash and range key), and what is in them.
type conformance struct {
	t              *testing.T
	db             *dynamodb.Client
	records, rows  string
	recordA, rowA  item // present before each transaction: updated or checked
	recordB, rowB  item // present: deleted
	neighbourOfRow item // same hash key as rowA, never touched
}

func newConformance(t *testing.T) *conformance {
	t.Helper()
	db := dynamotest.Client(t)
	c := &conformance{t: t, db: db,
		records:        dynamotest.Table(t, db, "IdempotencyTable"),
		rows:           dynamotest.Table(t, db, "OrdersTable"),
		recordA:        item{"pk": s("a"), "status": s("IN_PROGRESS"), "lease_token": s("t1"), "attempts": n("1")},
		recordB:        item{"pk": s("b"), "status": s("COMPLETED"), "body": &types.AttributeValueMemberB{Value: []byte("{}")}},
		rowA:           item{"scope": s("alice"), "order_id": s("o1"), "note": s("tea")},
		rowB:           item{"scope": s("bob"), "order_id": s("o2"), "note": s("cake")},
		neighbourOfRow: item{"scope": s("alice"), "order_id": s("o0"), "note": s("milk")},
	}
	for _, it := range []item{c.recordA, c.recordB} {
		c.put(c.records, it)
	}
	for _, it := range []item{c.rowA, c.rowB, c.neighbourOfRow} {
		c.put(c.rows, it)
	}
	return c
}

func (c *conformance) put(table string, it item) {
	c.t.Helper()
	if _, err := c.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		c.t.Fatal(err)
	}
}

// get reads the item under key back; nil if absent.
func (c *conformance) get(table string, key item) item {
	c.t.Helper()
	out, err := c.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		c.t.Fatal(err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// show prints an item readably ("absent" for none).
func show(it item) string {
	if len(it) == 0 {
		return "absent"
	}
	names := slices.Sorted(maps.Keys(it))
	parts := make([]string, len(names))
	for i, name := range names {
		switch v := it[name].(type) {
		case *types.AttributeValueMemberS:
			parts[i] = fmt.Sprintf("%s=%q", name, v.Value)
		case *types.AttributeValueMemberN:
			parts[i] = name + "=" + v.Value
		case *types.AttributeValueMemberB:
			parts[i] = fmt.Sprintf("%s=b%q", name, v.Value)
		default:
			parts[i] = fmt.Sprintf("%s=%T", name, v)
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func recordKey(pk string) item        { return item{"pk": s(pk)} }
func rowKey(scope, order string) item { return item{"scope": s(scope), "order_id": s(order)} }

// mustEqual fails unless the item under key is want (nil: absent).
func (c *conformance) mustEqual(what, table string, key, want item) {
	c.t.Helper()
	if got := c.get(table, key); !reflect.DeepEqual(got, want) {
		c.t.Errorf("%s: %s, want %s", what, show(got), show(want))
	}
}

// cancel runs a transaction that must be cancelled and returns its reasons.
func (c *conformance) cancel(actions ...types.TransactWriteItem) []types.CancellationReason {
	c.t.Helper()
	_, err := c.db.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: actions})
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		c.t.Fatalf("transaction: err = %v, want TransactionCanceledException", err)
	}
	return tc.CancellationReasons
}

// TestConformanceCancellationReasonsInItemOrder: one reason per action, in
// the request's order, "None" for the actions that would have succeeded, and
// the old item only where the action asked for ALL_OLD and an item was there.
func TestConformanceCancellationReasonsInItemOrder(t *testing.T) {
	c := newConformance(t)
	reasons := c.cancel(
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(c.records), Item: item{"pk": s("new")}, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(c.rows), Item: c.rowA, ConditionExpression: aws.String("attribute_not_exists(order_id)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		types.TransactWriteItem{Update: &types.Update{TableName: aws.String(c.records), Key: recordKey("b"), UpdateExpression: aws.String("SET seen = :t"),
			ExpressionAttributeValues: item{":t": n("1")}}},
		types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(c.records), Key: recordKey("a"),
			ConditionExpression: aws.String("lease_token = :mine"), ExpressionAttributeValues: item{":mine": s("t2")},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(c.rows), Key: rowKey("bob", "o2"), ConditionExpression: aws.String("note = :x"),
			ExpressionAttributeValues: item{":x": s("not cake")}}},
	)
	want := []struct {
		code string
		old  item
	}{{"None", nil}, {"ConditionalCheckFailed", c.rowA}, {"None", nil}, {"ConditionalCheckFailed", c.recordA}, {"ConditionalCheckFailed", nil}}
	if len(reasons) != len(want) {
		t.Fatalf("%d reasons for %d actions: %+v", len(reasons), len(want), reasons)
	}
	for i, w := range want {
		if got := aws.ToString(reasons[i].Code); got != w.code {
			t.Errorf("action %d: code %q, want %q", i, got, w.code)
		}
		if got := item(reasons[i].Item); len(got) != len(w.old) || (len(w.old) > 0 && !reflect.DeepEqual(got, w.old)) {
			t.Errorf("action %d: old item %s, want %s", i, show(got), show(w.old))
		}
	}
}

// TestConformanceSingleWriteReturnsOldItem: a put, update or delete whose
// condition fails returns the item it found when asked for ALL_OLD, and
// nothing when not asked.
func TestConformanceSingleWriteReturnsOldItem(t *testing.T) {
	c := newConformance(t)
	ctx := context.Background()
	notMine := aws.String("lease_token = :mine")
	mine := item{":mine": s("t2")}
	for _, allOld := range []bool{true, false} {
		rv := types.ReturnValuesOnConditionCheckFailureNone
		want := item(nil)
		if allOld {
			rv, want = types.ReturnValuesOnConditionCheckFailureAllOld, c.recordA
		}
		calls := map[string]func() error{
			"PutItem": func() error {
				_, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.records), Item: item{"pk": s("a")},
					ConditionExpression: notMine, ExpressionAttributeValues: mine, ReturnValuesOnConditionCheckFailure: rv})
				return err
			},
			"UpdateItem": func() error {
				_, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(c.records), Key: recordKey("a"),
					UpdateExpression: aws.String("SET lease_until = :z"), ConditionExpression: notMine,
					ExpressionAttributeValues: item{":mine": s("t2"), ":z": n("0")}, ReturnValuesOnConditionCheckFailure: rv})
				return err
			},
			"DeleteItem": func() error {
				_, err := c.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(c.records), Key: recordKey("a"),
					ConditionExpression: notMine, ExpressionAttributeValues: mine, ReturnValuesOnConditionCheckFailure: rv})
				return err
			},
		}
		for op, call := range calls {
			var ccf *types.ConditionalCheckFailedException
			if err := call(); !errors.As(err, &ccf) {
				t.Fatalf("%s (ALL_OLD %v): err = %v, want ConditionalCheckFailedException", op, allOld, err)
			}
			if got := item(ccf.Item); len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
				t.Errorf("%s (ALL_OLD %v): old item %s, want %s", op, allOld, show(got), show(want))
			}
		}
	}
	c.mustEqual("the record after three failed writes", c.records, recordKey("a"), c.recordA)
}

// TestConformanceCancelledTransactionLeavesItemsAsTheyWere: whatever a
// cancelled transaction did before the action that failed is undone, on
// both tables: new items are gone, updated and deleted ones are back as they
// were, and the item beside them under the same hash key is untouched.
func TestConformanceCancelledTransactionLeavesItemsAsTheyWere(t *testing.T) {
	c := newConformance(t)
	writes := []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(c.records), Item: item{"pk": s("new")}}},
		{Put: &types.Put{TableName: aws.String(c.rows), Item: item{"scope": s("alice"), "order_id": s("o9")}}},
		{Put: &types.Put{TableName: aws.String(c.rows), Item: item{"scope": s("carol"), "order_id": s("o1")}}},
		{Update: &types.Update{TableName: aws.String(c.records), Key: recordKey("a"), UpdateExpression: aws.String("SET #s = :c, attempts = attempts + :one REMOVE lease_token"),
			ExpressionAttributeNames: map[string]string{"#s": "status"}, ExpressionAttributeValues: item{":c": s("COMPLETED"), ":one": n("1")}}},
		{Update: &types.Update{TableName: aws.String(c.rows), Key: rowKey("alice", "o1"), UpdateExpression: aws.String("SET note = :n"), ExpressionAttributeValues: item{":n": s("coffee")}}},
		{Delete: &types.Delete{TableName: aws.String(c.records), Key: recordKey("b")}},
		{Delete: &types.Delete{TableName: aws.String(c.rows), Key: rowKey("bob", "o2")}},
	}
	check := func(when string) {
		t.Helper()
		c.mustEqual(when+": new record", c.records, recordKey("new"), nil)
		c.mustEqual(when+": new row beside an existing one", c.rows, rowKey("alice", "o9"), nil)
		c.mustEqual(when+": new row under a new hash key", c.rows, rowKey("carol", "o1"), nil)
		c.mustEqual(when+": updated record", c.records, recordKey("a"), c.recordA)
		c.mustEqual(when+": updated row", c.rows, rowKey("alice", "o1"), c.rowA)
		c.mustEqual(when+": deleted record", c.records, recordKey("b"), c.recordB)
		c.mustEqual(when+": deleted row", c.rows, rowKey("bob", "o2"), c.rowB)
		c.mustEqual(when+": untouched neighbour", c.rows, rowKey("alice", "o0"), c.neighbourOfRow)
	}
	failing := types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(c.records), Key: recordKey("missing"), ConditionExpression: aws.String("attribute_exists(pk)")}}
	reasons := c.cancel(append(writes, failing)...)
	if code := aws.ToString(reasons[len(reasons)-1].Code); code != "ConditionalCheckFailed" {
		t.Fatalf("last reason %q", code)
	}
	check("cancelled by a failed condition")

	// The same writes, then one that touches an item twice: refused as
	// invalid, and undone as well.
	_, err := c.db.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: append(writes,
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(c.records), Item: item{"pk": s("new"), "again": n("1")}}})})
	if err == nil {
		t.Fatal("a transaction touching one item twice committed")
	}
	check("refused for touching an item twice")
}

// TestConformanceCommittedTransactionApplies: the same writes without the
// failing action all land, and nothing else changes.
func TestConformanceCommittedTransactionApplies(t *testing.T) {
	c := newConformance(t)
	_, err := c.db.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(c.records), Item: item{"pk": s("new")}, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Update: &types.Update{TableName: aws.String(c.rows), Key: rowKey("alice", "o1"), UpdateExpression: aws.String("SET note = :n"),
			ConditionExpression: aws.String("note = :old"), ExpressionAttributeValues: item{":n": s("coffee"), ":old": s("tea")}}},
		{Delete: &types.Delete{TableName: aws.String(c.records), Key: recordKey("b")}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(c.records), Key: recordKey("a"), ConditionExpression: aws.String("lease_token = :mine"),
			ExpressionAttributeValues: item{":mine": s("t1")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.mustEqual("put", c.records, recordKey("new"), item{"pk": s("new")})
	c.mustEqual("update", c.rows, rowKey("alice", "o1"), item{"scope": s("alice"), "order_id": s("o1"), "note": s("coffee")})
	c.mustEqual("delete", c.records, recordKey("b"), nil)
	c.mustEqual("checked, not written", c.records, recordKey("a"), c.recordA)
	c.mustEqual("untouched neighbour", c.rows, rowKey("alice", "o0"), c.neighbourOfRow)
}

// TestConformanceClientRequestToken: a transaction resent with its
// ClientRequestToken is answered with the first one's success and not
// applied again (an ADD counter reads 1), and the token with other items is
// refused with IdempotentParameterMismatchException, changing nothing.
func TestConformanceClientRequestToken(t *testing.T) {
	c := newConformance(t)
	ctx := context.Background()
	count := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(c.records), Key: recordKey(pk),
			UpdateExpression: aws.String("ADD hits :one"), ExpressionAttributeValues: item{":one": n("1")}}}
	}
	in := &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("token-1"), TransactItems: []types.TransactWriteItem{count("a"), count("b")}}
	for i := range 2 {
		if _, err := c.db.TransactWriteItems(ctx, in); err != nil {
			t.Fatalf("send %d: %v", i+1, err)
		}
	}
	other := &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("token-1"), TransactItems: []types.TransactWriteItem{count("a")}}
	_, err := c.db.TransactWriteItems(ctx, other)
	if mismatch := new(types.IdempotentParameterMismatchException); !errors.As(err, &mismatch) {
		t.Fatalf("the token with other items: %v, want IdempotentParameterMismatchException", err)
	}
	for _, pk := range []string{"a", "b"} {
		if got := c.get(c.records, recordKey(pk))["hits"]; !reflect.DeepEqual(got, n("1")) {
			t.Fatalf("%s: hits = %v after the transaction, its resend and a mismatch; want 1", pk, show(item{"hits": got}))
		}
	}
	in.ClientRequestToken = aws.String("token-2") // a new token: applied again
	if _, err := c.db.TransactWriteItems(ctx, in); err != nil {
		t.Fatal(err)
	}
	if got := c.get(c.records, recordKey("a"))["hits"]; !reflect.DeepEqual(got, n("2")) {
		t.Fatalf("hits = %v after a new token, want 2", show(item{"hits": got}))
	}
}
