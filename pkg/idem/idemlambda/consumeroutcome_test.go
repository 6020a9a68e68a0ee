package idemlambda_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// An error from ConsumerOptions.Key (a message without the producer's id
// attribute) fails its message alone, as a handler's error does.
func TestAnErrorFromKeyFailsItsMessageAlone(t *testing.T) {
	b := newQueueBed(t, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Key = idemlambda.SQSAttribute("event-id") })
	withID := func(id, body string) events.SQSMessage {
		m := grouped(standardQueue, id, "", body)
		m.MessageAttributes = map[string]events.SQSMessageAttribute{"event-id": {StringValue: aws.String("e-" + id), DataType: "String"}}
		return m
	}
	got := b.deliver(withID("1", "o1"), grouped(standardQueue, "2", "", "o2"), withID("3", "o3"))
	if got != "[2]" || !b.applied("o1") || b.applied("o2") || !b.applied("o3") {
		t.Fatalf("failures %s; want [2] alone, its neighbours applied", got)
	}
}

// The SQS door's own error is nil even when every message fails: each
// failure is reported in the response.
func TestTheSQSDoorsErrorIsNilWhenEveryMessageFails(t *testing.T) {
	b := newQueueBed(t)
	if got := b.deliver(grouped(standardQueue, "1", "", "poison"), grouped(standardQueue, "2", "", "poison")); got != "[1 2]" {
		t.Fatalf("failures %s; want [1 2]", got)
	}
}

// In a consumer a ConflictFunc's Response is the event's outcome: below
// 500 the event is processed, none of its writes made, and a redelivery is
// skipped; a 5xx leaves it unprocessed, and its redelivery runs the
// handler again.
func TestAConflictFuncsResponseIsTheEventsOutcome(t *testing.T) {
	for _, c := range []struct {
		status   int
		failures string
		runs     int
	}{{409, "[]", 1}, {503, "[1]", 2}} {
		b := newQueueBed(t)
		ctx := context.Background()
		taken := map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: "o1"}}
		if _, err := b.store.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: taken}); err != nil {
			t.Fatal(err)
		}
		runs := 0
		handle := idemlambda.SQS(b.store, func(_ context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error {
			runs++
			tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(b.table), ConditionExpression: aws.String("attribute_not_exists(pk)"),
				Item: map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: ev.Event.Body}, "v": &types.AttributeValueMemberS{Value: "new"}}}},
				func(map[string]types.AttributeValue) (idem.Response, error) {
					return idem.Response{StatusCode: c.status}, nil
				})
			return nil
		}, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = "orders-consumer" })
		b.handle = handle
		for range 2 {
			if got := b.deliver(grouped(standardQueue, "1", "", "o1")); got != c.failures {
				t.Fatalf("status %d: failures %s, want %s", c.status, got, c.failures)
			}
		}
		out, err := b.store.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: taken, ConsistentRead: aws.Bool(true)})
		if err != nil || out.Item["v"] != nil || runs != c.runs {
			t.Fatalf("status %d: %d runs, item %v (%v); want %d runs and the item untouched", c.status, runs, out.Item, err, c.runs)
		}
	}
}
