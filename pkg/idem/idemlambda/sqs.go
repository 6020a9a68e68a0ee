package idemlambda

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
)

// SQS wraps h for an SQS-triggered Lambda with ReportBatchItemFailures:
// each message is processed once per id (its messageId unless
// ConsumerOptions.Key says otherwise), its writes committed with its
// processed marker in one transaction; a message processed before is
// skipped; only the messages that failed are reported back, so the rest
// of the batch is not redelivered. The messages of a batch are processed
// one after another, in the batch's order; a message that comes twice in
// one batch (SQS delivers at least once) takes effect once, its second
// copy skipped as processed. An error from ConsumerOptions.Key fails its
// message as a handler's error does. The returned error is always nil:
// every failure is a message's, reported in the response. It panics
// without ConsumerOptions.Scope.
//
// A message is from a FIFO queue when its EventSourceARN ends in ".fifo";
// a MessageGroupId alone does not make it one. On a FIFO queue a failure
// also fails every message after it in the batch, of every message group,
// which SQS then redelivers in order; with ConsumerOptions.FailGroupOnly,
// only the later messages of the failed message's own group.
//
// A message whose id another delivery holds (in progress, under a live
// lease) is reported failed, never acknowledged: the holder may still
// fail, and the redelivery then takes effect. A message whose id was
// processed with another body (a producer that reused an id) is refused:
// reported failed, with a WARN line, on every delivery, until the queue's
// redrive policy moves it to the dead-letter queue (without one, until its
// retention period ends).
func SQS(s Doer, h EventHandler[events.SQSMessage], optFns ...func(*ConsumerOptions[events.SQSMessage])) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	c := newConsumer("SQS", optFns)
	c.kind = "SQS"
	if c.Key == nil {
		c.Key = func(m *events.SQSMessage) (string, error) { return m.MessageId, nil }
	}
	c.raw = func(m *events.SQSMessage) (string, []byte) { return c.Scope, []byte(m.Body) }
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		var order fifoOrder
		for i := range ev.Records {
			msg := &ev.Records[i]
			fifo := strings.HasSuffix(msg.EventSourceARN, ".fifo")
			if fifo && order.blocked(msg, c.FailGroupOnly) {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
				continue
			}
			if err := c.process(ctx, s, msg, h); err != nil {
				c.logFailure("message", msg.MessageId, err)
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
				order.failed(msg)
			}
		}
		return resp, nil
	}
}

// fifoOrder is what a batch's failures hold back on a FIFO queue: every
// later message, or with FailGroupOnly the later messages of each failed
// message's group.
type fifoOrder struct {
	any    bool
	groups map[string]bool
}

func (o *fifoOrder) failed(msg *events.SQSMessage) {
	o.any = true
	if o.groups == nil {
		o.groups = map[string]bool{}
	}
	o.groups[msg.Attributes["MessageGroupId"]] = true
}

func (o *fifoOrder) blocked(msg *events.SQSMessage, groupOnly bool) bool {
	if !groupOnly {
		return o.any
	}
	return o.groups[msg.Attributes["MessageGroupId"]]
}

// SQSAttribute reads the event's id from a message attribute (a String)
// that holds the producer's event id, for ConsumerOptions.Key. SQS keeps a
// messageId across redeliveries of one message, but a producer that sends
// an event twice (a retried send) makes two messages of it: only the
// producer's id says they are the same event.
func SQSAttribute(name string) func(*events.SQSMessage) (string, error) {
	return func(m *events.SQSMessage) (string, error) {
		a, ok := m.MessageAttributes[name]
		if !ok || a.StringValue == nil || *a.StringValue == "" {
			return "", fmt.Errorf("%w: message has no %s attribute", idem.ErrInvalidKey, name)
		}
		return *a.StringValue, nil
	}
}
