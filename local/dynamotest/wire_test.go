package dynamotest_test

import (
	"context"
	"errors"
	"maps"
	"os"
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
