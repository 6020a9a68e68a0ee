package idemlambda_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// queueBed is an SQS consumer on a Store of the kit whose handler puts an
// item named by the message's body in a table of its own, and fails for
// the body "poison".
type queueBed struct {
	t      *testing.T
	store  *idemtest.Store
	table  string
	runs   int
	handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

func newQueueBed(t *testing.T, optFns ...func(*idemlambda.ConsumerOptions[events.SQSMessage])) *queueBed {
	s := idemtest.NewStore(t)
	b := &queueBed{t: t, store: s, table: idemtest.Table(t, s.Client)}
	optFns = append([]func(*idemlambda.ConsumerOptions[events.SQSMessage]){func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = "orders-consumer" }}, optFns...)
	b.handle = idemlambda.SQS(s, func(_ context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error {
		b.runs++
		if ev.Event.Body == "poison" {
			return errors.New("poison message")
		}
		tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(b.table), Item: map[string]types.AttributeValue{
			idem.AttrPK: &types.AttributeValueMemberS{Value: ev.Event.Body},
		}}}, nil)
		return nil
	}, optFns...)
	return b
}

// deliver hands the batch to the consumer and returns the ids it reported
// failed; the consumer's own error must be nil.
func (b *queueBed) deliver(msgs ...events.SQSMessage) string {
	b.t.Helper()
	resp, err := b.handle(context.Background(), events.SQSEvent{Records: msgs})
	if err != nil {
		b.t.Fatalf("the SQS door's error: %v, want nil", err)
	}
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return fmt.Sprint(ids)
}

// applied reports whether the message whose body is body took effect.
func (b *queueBed) applied(body string) bool {
	b.t.Helper()
	out, err := b.store.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(b.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: body}}})
	if err != nil {
		b.t.Fatal(err)
	}
	return out.Item != nil
}

// grouped is a message of group on the queue arn.
func grouped(arn, id, group, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSourceARN: arn, Attributes: map[string]string{"MessageGroupId": group}}
}

const (
	fifoQueue     = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
	standardQueue = "arn:aws:sqs:us-east-1:123456789012:orders"
)

// On a FIFO queue (an EventSourceARN ending in ".fifo") a failure fails
// every later message of the batch, of every group.
func TestAFIFOFailureFailsEveryLaterMessageOfEveryGroup(t *testing.T) {
	b := newQueueBed(t)
	got := b.deliver(grouped(fifoQueue, "1", "A", "a1"), grouped(fifoQueue, "2", "A", "poison"),
		grouped(fifoQueue, "3", "B", "b1"), grouped(fifoQueue, "4", "A", "a2"))
	if got != "[2 3 4]" || !b.applied("a1") || b.applied("b1") || b.applied("a2") {
		t.Fatalf("failures %s, b1 applied %v; want [2 3 4], nothing after the failure applied", got, b.applied("b1"))
	}
}

// With FailGroupOnly a FIFO failure fails the later messages of its own
// group only: another group's messages are processed.
func TestFailGroupOnlyFailsTheFailedMessagesGroupAlone(t *testing.T) {
	b := newQueueBed(t, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.FailGroupOnly = true })
	got := b.deliver(grouped(fifoQueue, "1", "A", "a1"), grouped(fifoQueue, "2", "A", "poison"),
		grouped(fifoQueue, "3", "B", "b1"), grouped(fifoQueue, "4", "A", "a2"), grouped(fifoQueue, "5", "B", "b2"))
	if got != "[2 4]" || !b.applied("a1") || !b.applied("b1") || !b.applied("b2") || b.applied("a2") {
		t.Fatalf("failures %s; want [2 4]: group B processed, group A held back after its failure", got)
	}
	if b.runs != 4 {
		t.Fatalf("the handler ran %d times; want 4 (not for the held-back a2)", b.runs)
	}
}

// A MessageGroupId alone does not make a queue FIFO: on a queue whose
// EventSourceARN does not end in ".fifo" a failure fails its message alone.
func TestAMessageGroupIDAloneDoesNotMakeAQueueFIFO(t *testing.T) {
	b := newQueueBed(t)
	got := b.deliver(grouped(standardQueue, "1", "A", "a1"), grouped(standardQueue, "2", "A", "poison"),
		grouped(standardQueue, "3", "A", "a2"))
	if got != "[2]" || !b.applied("a1") || !b.applied("a2") {
		t.Fatalf("failures %s; want [2] alone", got)
	}
}
