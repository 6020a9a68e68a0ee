package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/idem"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

// change is a stream record of OrdersTable, as the pipe delivers it.
func change(t *testing.T, eventID, name, scope, order string, quantities ...int) string {
	t.Helper()
	var items []events.DynamoDBAttributeValue
	for _, q := range quantities {
		items = append(items, events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"sku": events.NewStringAttribute("tea"), "quantity": events.NewNumberAttribute(strconv.Itoa(q)),
		}))
	}
	b, err := json.Marshal(events.DynamoDBEventRecord{EventID: eventID, EventName: name, Change: events.DynamoDBStreamRecord{
		NewImage: map[string]events.DynamoDBAttributeValue{
			"scope": events.NewStringAttribute(scope), "order_id": events.NewStringAttribute(order), "items": events.NewListAttribute(items),
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEachOrderCountsOnceHoweverDelivered(t *testing.T) {
	raw := dynamotest.Client(t)
	stats := dynamotest.Table(t, raw, "OrderStatsTable")
	store, err := idem.New(raw, dynamotest.Table(t, raw, "IdempotencyTable"))
	if err != nil {
		t.Fatal(err)
	}
	p := &projector{table: stats}
	handle, err := store.SQS(p.project, func(o *idem.SQSOptions) { o.Scope, o.Key = consumer, eventID })
	if err != nil {
		t.Fatal(err)
	}
	first := change(t, "e1", "INSERT", "alice", "o1", 2, 3)
	batch := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: first},
		{MessageId: "m2", Body: first}, // the pipe sent the same change again
		{MessageId: "m3", Body: change(t, "e2", "INSERT", "alice", "o2", 1)},
		{MessageId: "m4", Body: change(t, "e3", "MODIFY", "alice", "o2", 9)},
		{MessageId: "m5", Body: "not a stream record"},
	}}
	for delivery := range 2 { // and SQS redelivers the whole batch
		resp, err := handle(context.Background(), batch)
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m5" {
			t.Fatalf("delivery %d: %+v, %v; want only m5 failed", delivery, resp, err)
		}
	}
	out, err := raw.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(stats), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: "alice"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := func(name string) string {
		if v, ok := out.Item[name].(*types.AttributeValueMemberN); ok {
			return v.Value
		}
		return ""
	}
	if got("order_count") != "2" || got("item_count") != "6" {
		t.Fatalf("stats = %v: want 2 orders and 6 items", out.Item)
	}
}

func TestTemplateTableMatchesTheCode(t *testing.T) {
	apitest.CheckKeys(t, "OrderStatsTable", attrScope)
}
