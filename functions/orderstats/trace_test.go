package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/functions/internal/tracing"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// streamedOrder writes an order into a table defined like OrdersTable,
// with its stream (NEW_IMAGE, as template.yaml has it), as the order
// function writes one under the span in ctx, and returns the stream
// record of its creation as the pipe puts it on the queue: the record,
// as JSON, for the message's body.
func streamedOrder(t *testing.T, ctx context.Context, raw *dynamodb.Client, scope, id string) string {
	t.Helper()
	orders := dynamotest.Table(t, raw, "OrdersTable")
	_, err := raw.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: aws.String(orders),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}})
	if err != nil {
		t.Fatal(err)
	}
	item := map[string]types.AttributeValue{
		"scope": &types.AttributeValueMemberS{Value: scope}, "order_id": &types.AttributeValueMemberS{Value: id},
		"items": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"sku": &types.AttributeValueMemberS{Value: "tea"}, "quantity": &types.AttributeValueMemberN{Value: "2"}}}}},
		"status": &types.AttributeValueMemberS{Value: "created"}, "created": &types.AttributeValueMemberN{Value: "1796000000"},
		tracing.ItemAttribute: &types.AttributeValueMemberS{Value: tracing.Parent(ctx)},
	}
	if _, err := raw.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(orders), Item: item}); err != nil {
		t.Fatal(err)
	}
	return firstRecord(t, raw, orders)
}

// firstRecord is the first record of the table's stream, read from the
// engine's DynamoDB Streams API as the pipe reads it (idemtest.StreamEvent),
// in the JSON the pipe sends.
func firstRecord(t *testing.T, raw *dynamodb.Client, table string) string {
	t.Helper()
	b, err := json.Marshal(idemtest.StreamEvent(t, raw, table, 1).Records[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A traced order's creation, as DynamoDB Local's stream records it and the
// pipe delivers it, is counted in a trace of its own linked to the order's:
// the consumer's invocation span ("process <queue>"), the message's Store
// span under it with a link to the span that wrote the order, and the
// marker's claim, the stats' read and the commit under that. Delivered again, it is replayed
// without the handler, so without a link.
func TestACountedOrderLinksToTheSpanThatWroteIt(t *testing.T) {
	f := newConsumer(t)
	orderTracing, _ := apitest.Traced()
	ctx, orderSpan := orderTracing.Provider().Tracer("order").Start(context.Background(), "idem.Do")
	body := streamedOrder(t, ctx, f.raw, "alice", "o-1")
	orderSpan.End()
	for k, v := range map[string]string{
		"IDEMPOTENCY_TABLE": f.idem, "ORDER_STATS_TABLE": f.stats,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
	} {
		t.Setenv(k, v)
	}
	tr, rec := apitest.Traced()
	handle, err := newHandler(context.Background(), tr, func(o *dynamodb.Options) { o.HTTPClient = calls })
	if err != nil {
		t.Fatal(err)
	}
	msg := events.SQSMessage{MessageId: "m1", Body: body, EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:OrderEventsQueue"}
	for range 2 {
		if resp, err := handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}}); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%+v, %v", resp, err)
		}
	}
	if n := f.count(t, "alice"); n != "1" {
		t.Fatalf("order_count %s, want the order counted once", n)
	}
	spans := apitest.Spans(rec.Ended())
	batches := spans.Roots("process OrderEventsQueue")
	if len(batches) != 2 {
		t.Fatalf("%d invocation traces, want one per delivery: %v", len(batches), spans.Names())
	}
	first, again := spans.Children(batches[0]), spans.Children(batches[1])
	if batches[0].SpanKind() != trace.SpanKindConsumer || apitest.Attr(batches[0], "messaging.batch.message_count") != "1" ||
		apitest.Attr(batches[0], string(tracing.BatchItemFailures)) != "0" || len(first) != 1 || len(again) != 1 {
		t.Fatalf("the first delivery:\n%s %v: want a consumer span of one message, none failed, over the message's span", spans.Tree(batches[0]), batches[0].Attributes())
	}
	links := first[0].Links()
	if len(links) != 1 || links[0].SpanContext.TraceID() != orderSpan.SpanContext().TraceID() || links[0].SpanContext.SpanID() != orderSpan.SpanContext().SpanID() {
		t.Errorf("the message's span %s links to %v, want the order's span %v", first[0].Name(), links, orderSpan.SpanContext())
	}
	if got, want := spans.Children(first[0]).Names(), []string{"DynamoDB.PutItem", "DynamoDB.GetItem", "DynamoDB.TransactWriteItems"}; !slices.Equal(got, want) {
		t.Errorf("the message's span's children %v, want the marker's claim, the stats' read and the commit: %v", got, want)
	}
	if apitest.Attr(again[0], "idem.outcome") != "replayed" || len(again[0].Links()) != 0 {
		t.Errorf("the redelivery's span: %s %v, links %v; want a replay without a link", again[0].Name(), again[0].Attributes(), again[0].Links())
	}
}
