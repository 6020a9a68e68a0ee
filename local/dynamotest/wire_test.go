package dynamotest_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamotest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

// TestWireCountsEveryAttemptByAnswer sends a put that lands, the same put
// failing its condition, and a transaction cancelled on its first item's
// condition, and expects each counted once under its answer, with the
// connection the client opened.
func TestWireCountsEveryAttemptByAnswer(t *testing.T) {
	ctx := context.Background()
	raw := dynamotest.Client(t)
	table := dynamotest.Table(t, raw, "IdempotencyTable")
	w := &dynamotest.Wire{}
	db := dynamotest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = w })
	item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "wire"}}
	put := &dynamodb.PutItemInput{TableName: aws.String(table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}
	if _, err := db.PutItem(ctx, put); err != nil {
		t.Fatal(err)
	}
	var ccf *types.ConditionalCheckFailedException
	if _, err := db.PutItem(ctx, put); !errors.As(err, &ccf) {
		t.Fatalf("second put: %v, want its condition failed", err)
	}
	_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "other"}}}},
	}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("transaction: %v, want it cancelled", err)
	}
	want := map[string]int{
		"PutItem ok": 1,
		"PutItem ConditionalCheckFailedException":                                       1,
		"TransactWriteItems TransactionCanceledException [ConditionalCheckFailed None]": 1,
	}
	if got := w.Answers(); !maps.Equal(got, want) {
		t.Fatalf("answers %v, want %v", got, want)
	}
	if w.Attempts() != 3 || w.Connections() != 1 || w.OnTheWire() <= 0 {
		t.Fatalf("attempts %d, connections %d, on the wire %v; want 3, 1 and some time", w.Attempts(), w.Connections(), w.OnTheWire())
	}
	w.Reset()
	if w.Attempts() != 0 || w.Connections() != 0 || w.OnTheWire() != 0 {
		t.Fatalf("after Reset: %d attempts, %d connections, %v", w.Attempts(), w.Connections(), w.OnTheWire())
	}
}

// Actions records the IAM action every request needs, by the table's
// logical id: the operation's own, and a transaction's action by action.
func TestActionsRecordWhatEachRequestNeeds(t *testing.T) {
	calls := &dynamotest.Actions{}
	db := dynamotest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = calls })
	setup := dynamotest.Client(t) // the test's own: not recorded
	idem := dynamotest.Table(t, setup, "IdempotencyTable")
	orders := dynamotest.Table(t, setup, "OrdersTable")
	ctx := context.Background()
	pk := func(v string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: v}}
	}
	order := func(v string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"scope": &types.AttributeValueMemberS{Value: "s"}, "order_id": &types.AttributeValueMemberS{Value: v}}
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(idem), Item: pk("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(idem)}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(idem), Key: pk("a"), UpdateExpression: aws.String("SET n = :n"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "1"}}}},
		{Delete: &types.Delete{TableName: aws.String(idem), Key: pk("b")}},
		{Put: &types.Put{TableName: aws.String(orders), Item: order("o1")}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(orders), Key: order("o2"), ConditionExpression: aws.String("attribute_not_exists(order_id)")}},
	}}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"IdempotencyTable": {"dynamodb:DeleteItem", "dynamodb:DescribeTable", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		"OrdersTable":      {"dynamodb:ConditionCheckItem", "dynamodb:PutItem"},
	}
	if got := calls.Needed(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Needed() = %v, want %v", got, want)
	}
}
