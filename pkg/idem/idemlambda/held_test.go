package idemlambda_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// holding is a way another delivery (another Lambda) holds an event's key
// with a live lease, and then lets go of it without committing.
type holding struct {
	name string
	// hold runs deliver on another Store, its handler's work added to
	// the effect, and returns once key (consumer "projector"'s) is held;
	// release then fails the holder.
	hold func(t *testing.T, f *testbed.Fixture, key string, deliver func(s idemlambda.Doer, work func() error)) (release func())
}

var holdings = []holding{
	{"a holder whose work is under way, then fails", func(t *testing.T, f *testbed.Fixture, key string, deliver func(idemlambda.Doer, func() error)) func() {
		claimed, fail, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			deliver(f.NewStore(), func() error {
				close(claimed)
				<-fail
				return errors.New("the holder's dependency failed")
			})
		}()
		select {
		case <-claimed:
		case <-done:
			t.Fatal("the holder did not get the key")
		}
		return func() { close(fail); <-done }
	}},
	{"a holder that crashed after its claim, its lease then run out", func(t *testing.T, f *testbed.Fixture, key string, deliver func(idemlambda.Doer, func() error)) func() {
		// Every call after the claim is refused at once, so the holder
		// leaves the record as a process killed after its claim does:
		// claimed under a live lease, never committed nor lapsed.
		s, err := idem.New(killedAfterClaim{f.Raw}, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now; o.Lease = 10 * time.Second })
		if err != nil {
			t.Fatal(err)
		}
		deliver(s, func() error { return nil })
		if rec := f.Record("projector", key); testbed.Str(rec, "status") != "IN_PROGRESS" || testbed.Num(rec, "lease_until") == "0" {
			t.Fatalf("record %v: the crash did not leave the key claimed", rec)
		}
		return func() { f.Clock.Advance(11 * time.Second) }
	}},
}

// killedAfterClaim is a holder's client that makes its claim (a PutItem)
// and refuses every call after it, as the calls of a process killed after
// its claim never land.
type killedAfterClaim struct{ idem.DynamoDBAPI }

var errKilled = &smithy.GenericAPIError{Code: "ValidationException", Message: "process killed"}

func (killedAfterClaim) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errKilled
}

func (killedAfterClaim) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errKilled
}

func (killedAfterClaim) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errKilled
}

// TestAMessageWhoseKeyIsHeldStaysOnTheQueue: a message whose key another
// delivery holds under a live lease is reported failed
// (batchItemFailures), never acknowledged, on a standard queue and on a
// FIFO one (where the messages after it fail too): the holder may still
// fail. Once it has, the message's redelivery takes effect, once.
func TestAMessageWhoseKeyIsHeldStaysOnTheQueue(t *testing.T) {
	for _, queue := range []string{"standard", "FIFO"} {
		for _, h := range holdings {
			t.Run(queue+"/"+h.name, func(t *testing.T) {
				f := newFixture(t)
				arn := "arn:aws:sqs:us-east-1:123456789012:orders"
				if queue == "FIFO" {
					arn += ".fifo"
				}
				msg := func(id, body string) events.SQSMessage {
					m := message(id, body)
					m.EventSourceARN = arn
					return m
				}
				release := h.hold(t, f, "m2", func(s idemlambda.Doer, work func() error) {
					_, _ = idemlambda.SQS(s, func(ctx context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error { // the holder's own answer is not what this test checks
						tx.Add(count(f, ev.Event.Body), nil)
						return work()
					}, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = "projector" })(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m2", "order-2")}})
				})
				handle := consumer(f)
				resp, err := handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", "order-1"), msg("m2", "order-2"), msg("m3", "order-3")}})
				failed, again := "[m2]", []events.SQSMessage{msg("m2", "order-2")}
				if queue == "FIFO" {
					failed, again = "[m2 m3]", append(again, msg("m3", "order-3"))
				}
				if got := fmt.Sprint(failedIDs(resp)); err != nil || got != failed {
					t.Fatalf("failures %s (%v), want %s: a held message is not acknowledged", got, err, failed)
				}
				release()
				// SQS delivers again what failed, after its visibility timeout.
				if resp, err := handle(context.Background(), events.SQSEvent{Records: again}); err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("the redelivery: failures %v (%v), want none", failedIDs(resp), err)
				}
				for _, id := range []string{"order-1", "order-2", "order-3"} {
					if got := times(f, id); got != 1 {
						t.Errorf("%s took effect %d times, want once", id, got)
					}
				}
			})
		}
	}
}

// TestAnEventWhoseKeyIsHeldIsAnError: an EventBridge event whose key
// another delivery holds under a live lease returns an error that matches
// idem.ErrInProgress, so that Lambda invokes it again; once the holder
// failed, the retry takes effect, once.
func TestAnEventWhoseKeyIsHeldIsAnError(t *testing.T) {
	for _, h := range holdings {
		t.Run(h.name, func(t *testing.T) {
			f := newFixture(t)
			ev := events.CloudWatchEvent{ID: "ev-1", Source: "orders", DetailType: "OrderCreated", Detail: []byte(`{"order":"o1"}`)}
			handler := func(work func() error) idemlambda.EventHandler[events.CloudWatchEvent] {
				return func(ctx context.Context, e idemlambda.Event[events.CloudWatchEvent], tx *idem.Tx) error {
					tx.Add(count(f, "evt-"+e.Key), nil)
					return work()
				}
			}
			scope := func(o *idemlambda.ConsumerOptions[events.CloudWatchEvent]) { o.Scope = "projector" }
			release := h.hold(t, f, ev.ID, func(s idemlambda.Doer, work func() error) {
				_ = idemlambda.EventBridge(s, handler(work), scope)(context.Background(), ev) // the holder's own answer is not what this test checks
			})
			handle := idemlambda.EventBridge(f.NewStore(), handler(func() error { return nil }), scope)
			if err := handle(context.Background(), ev); !errors.Is(err, idem.ErrInProgress) {
				t.Fatalf("the event while its key is held: %v, want an error with ErrInProgress", err)
			}
			release()
			if err := handle(context.Background(), ev); err != nil {
				t.Fatalf("the retry: %v", err)
			}
			if got := times(f, "evt-"+ev.ID); got != 1 {
				t.Fatalf("the event took effect %d times, want once", got)
			}
		})
	}
}
