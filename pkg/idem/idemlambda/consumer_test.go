package idemlambda_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// count is the effect a message has: a counter incremented with ADD, which
// counts twice if the message is processed twice.
func count(f *testbed.Fixture, id string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(f.Business),
		Key: map[string]types.AttributeValue{
			"scope":    &types.AttributeValueMemberS{Value: "projection"},
			"order_id": &types.AttributeValueMemberS{Value: id},
		},
		UpdateExpression:          aws.String("ADD times :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}}
}

func times(f *testbed.Fixture, id string) int {
	f.T.Helper()
	item := f.Order("projection", id)
	if item == nil {
		return 0
	}
	n, _ := strconv.Atoi(item["times"].(*types.AttributeValueMemberN).Value)
	return n
}

func consumer(f *testbed.Fixture, optFns ...func(*idemlambda.ConsumerOptions[events.SQSMessage])) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	f.T.Helper()
	return idemlambda.SQS(f.NewStore(), func(ctx context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error {
		switch ev.Event.Body {
		case "poison":
			return errors.New("cannot parse")
		case "panic":
			var m map[string]int
			m["boom"]++ //nolint:govet,staticcheck // nilness, SA5000: a nil map, the handler's own bug, which the test provokes
		}
		tx.Add(count(f, ev.Event.Body), nil)
		return nil
	}, append([]func(*idemlambda.ConsumerOptions[events.SQSMessage]){func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = "projector" }}, optFns...)...)
}

func message(id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
}

func failedIDs(resp events.SQSEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func TestRedeliveredMessagesTakeEffectOnce(t *testing.T) {
	f := newFixture(t)
	handle := consumer(f)
	const n = 30
	// Each message is delivered 1 to 5 times, in batches of up to 10 mixed
	// at random, the batches processed concurrently, as several Lambda
	// instances polling one queue would.
	var deliveries []events.SQSMessage
	for i := range n {
		for range 1 + rand.IntN(5) {
			deliveries = append(deliveries, message("m-"+strconv.Itoa(i), "order-"+strconv.Itoa(i)))
		}
	}
	rand.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	for round := 0; len(deliveries) > 0; round++ {
		if round == 20 {
			t.Fatalf("%d deliveries still failing after 20 rounds", len(deliveries))
		}
		var mu sync.Mutex
		var again []events.SQSMessage
		var wg sync.WaitGroup
		for start := 0; start < len(deliveries); start += 10 {
			batch := deliveries[start:min(start+10, len(deliveries))]
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, _ := handle(context.Background(), events.SQSEvent{Records: batch})
				failed := map[string]bool{}
				for _, id := range failedIDs(resp) {
					failed[id] = true
				}
				mu.Lock()
				defer mu.Unlock()
				for _, m := range batch {
					if failed[m.MessageId] { // in progress elsewhere: SQS redelivers it
						again = append(again, m)
					}
				}
			}()
		}
		wg.Wait()
		deliveries = again
	}
	for i := range n {
		if got := times(f, "order-"+strconv.Itoa(i)); got != 1 {
			t.Errorf("message %d took effect %d times", i, got)
		}
	}
}

func TestPoisonMessageFailsAlone(t *testing.T) {
	f := newFixture(t)
	handle := consumer(f)
	batch := events.SQSEvent{Records: []events.SQSMessage{
		message("a", "order-a"), message("b", "order-b"), message("bad", "poison"), message("c", "order-c"),
	}}
	for attempt := range 2 { // the poison message comes back; the others must not count again
		resp, err := handle(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		if got := failedIDs(resp); len(got) != 1 || got[0] != "bad" {
			t.Fatalf("attempt %d: failures %v, want only the poison message", attempt, got)
		}
	}
	for _, id := range []string{"order-a", "order-b", "order-c"} {
		if got := times(f, id); got != 1 {
			t.Errorf("%s took effect %d times, want 1", id, got)
		}
	}
}

// TestPanickingMessageFailsAlone: a handler that panics on one message
// fails that message alone, reported as a batch item failure with its lease
// lapsed (its redelivery runs at once, not after the lease); the others are
// processed once, and the panic never leaves the Lambda handler.
func TestPanickingMessageFailsAlone(t *testing.T) {
	f := newFixture(t)
	var buf bytes.Buffer
	handle := consumer(f, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) {
		o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	})
	batch := events.SQSEvent{Records: []events.SQSMessage{message("a", "order-a"), message("p", "panic"), message("c", "order-c")}}
	for attempt := range 2 {
		var resp events.SQSEventResponse
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("attempt %d: the panic left the handler: %v", attempt, p)
				}
			}()
			resp, err = handle(context.Background(), batch)
		}()
		if got := failedIDs(resp); err != nil || len(got) != 1 || got[0] != "p" {
			t.Fatalf("attempt %d: failures %v, %v; want only the panicking message", attempt, got, err)
		}
	}
	for _, id := range []string{"order-a", "order-c"} {
		if got := times(f, id); got != 1 {
			t.Errorf("%s took effect %d times, want 1", id, got)
		}
	}
	if n, ok := f.Record("projector", "p")["lease_until"].(*types.AttributeValueMemberN); !ok || n.Value != "0" {
		t.Fatalf("the panicking message's lease_until = %v, want 0 (lapsed)", n)
	}
	if !strings.Contains(buf.String(), "panic") || !strings.Contains(buf.String(), "goroutine") || !strings.Contains(buf.String(), `"message_id":"p"`) {
		t.Fatalf("log %s: want the panic logged with its message", buf.String())
	}
}

func TestCrashBeforeAcknowledgementThenRedelivery(t *testing.T) {
	f := newFixture(t)
	batch := events.SQSEvent{Records: []events.SQSMessage{message("a", "order-a"), message("b", "order-b")}}
	// The first instance commits both, then dies before SQS hears back:
	// its answer is lost, and the visibility timeout redelivers the batch
	// to another instance.
	_, _ = consumer(f)(context.Background(), batch) // lost with the instance
	resp, err := consumer(f)(context.Background(), batch)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %v, %v; want all skipped as done", resp, err)
	}
	if times(f, "order-a") != 1 || times(f, "order-b") != 1 {
		t.Fatal("a redelivered message took effect again")
	}
}

func TestFIFOFailureFailsTheRestOfTheBatch(t *testing.T) {
	f := newFixture(t)
	fifo := func(id, body string) events.SQSMessage {
		m := message(id, body)
		m.EventSourceARN += ".fifo"
		return m
	}
	resp, _ := consumer(f)(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		fifo("1", "order-1"), fifo("2", "poison"), fifo("3", "order-3"),
	}})
	if got := fmt.Sprint(failedIDs(resp)); got != "[2 3]" {
		t.Fatalf("failures %s, want [2 3]: order must hold", got)
	}
	if times(f, "order-1") != 1 || times(f, "order-3") != 0 {
		t.Fatal("FIFO processing went past a failure")
	}
}

func TestProducerIDDeduplicatesAcrossMessages(t *testing.T) {
	f := newFixture(t)
	handle := consumer(f, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Key = idemlambda.SQSAttribute("event_id") })
	withID := func(messageID, eventID string) events.SQSMessage {
		m := message(messageID, "order-x")
		m.MessageAttributes = map[string]events.SQSMessageAttribute{"event_id": {StringValue: aws.String(eventID), DataType: "String"}}
		return m
	}
	// A producer that retried its send made two messages of one event.
	resp, _ := handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{withID("m1", "evt-1"), withID("m2", "evt-1")}})
	if len(resp.BatchItemFailures) != 0 || times(f, "order-x") != 1 {
		t.Fatalf("failures %v, effect %d times: want one effect", resp.BatchItemFailures, times(f, "order-x"))
	}
	resp, _ = handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m3", "order-x")}})
	if got := failedIDs(resp); len(got) != 1 {
		t.Fatalf("a message without the attribute: failures %v, want it failed", got)
	}
}

// A consumer without a scope is a mistake in its options, found when it is
// built, not on its first message: a panic with ErrInvalidOptions, on every
// consumer and on Function (which needs a Key too).
func TestConsumersNeedAScope(t *testing.T) {
	s := newFixture(t).Store
	builds := map[string]func(){
		"SQS": func() {
			idemlambda.SQS(s, func(context.Context, idemlambda.Event[events.SQSMessage], *idem.Tx) error { return nil })
		},
		"EventBridge": func() {
			idemlambda.EventBridge(s, func(context.Context, idemlambda.Event[events.CloudWatchEvent], *idem.Tx) error { return nil })
		},
		"Function": func() {
			idemlambda.Function(s, func(context.Context, idemlambda.Event[string], *idem.Tx) (string, error) { return "", nil },
				func(o *idemlambda.ConsumerOptions[string]) {
					o.Key = func(s *string) (string, error) { return *s, nil }
				})
		},
		"Function without a Key": func() {
			idemlambda.Function(s, func(context.Context, idemlambda.Event[string], *idem.Tx) (string, error) { return "", nil },
				func(o *idemlambda.ConsumerOptions[string]) { o.Scope = "shipper" })
		},
	}
	for name, build := range builds {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if err, _ := recover().(error); !errors.Is(err, idem.ErrInvalidOptions) {
					t.Fatalf("built: %v, want a panic with ErrInvalidOptions", err)
				}
			}()
			build()
		})
	}
}

// A consumer's scope is 1 to MaxScopeLength bytes, as a verified
// identity's is: one of exactly the limit is built, one byte more panics
// when built.
func TestAConsumersScopeMayBeAsLongAsTheLimit(t *testing.T) {
	s := newFixture(t).Store
	build := func(scope string) (err error) {
		defer func() { err, _ = recover().(error) }()
		idemlambda.SQS(s, func(context.Context, idemlambda.Event[events.SQSMessage], *idem.Tx) error { return nil },
			func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = scope })
		return nil
	}
	at, over := build(strings.Repeat("s", idem.MaxScopeLength)), build(strings.Repeat("s", idem.MaxScopeLength+1))
	if at != nil || !errors.Is(over, idem.ErrInvalidOptions) {
		t.Fatalf("a scope of the limit: %v; one byte over: %v; want it built, then ErrInvalidOptions", at, over)
	}
}

func TestEventBridgeEventsTakeEffectOnce(t *testing.T) {
	f := newFixture(t)
	handle := idemlambda.EventBridge(f.Store, func(ctx context.Context, ev idemlambda.Event[events.CloudWatchEvent], tx *idem.Tx) error {
		tx.Add(count(f, "evt-"+ev.Key), nil)
		return nil
	}, func(o *idemlambda.ConsumerOptions[events.CloudWatchEvent]) { o.Scope = "projector" })
	ev := events.CloudWatchEvent{ID: "7bf73129-1428-4cd3", Source: "orders", DetailType: "OrderCreated", Detail: []byte(`{"order":"o1"}`)}
	for range 3 {
		if err := handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if got := times(f, "evt-"+ev.ID); got != 1 {
		t.Fatalf("event took effect %d times", got)
	}
}

// TestPanickingEventIsAnError: an EventBridge handler that panics returns an
// error carrying the panic (so Lambda retries the event), its lease lapsed;
// the retry runs at once and takes effect once.
func TestPanickingEventIsAnError(t *testing.T) {
	f := newFixture(t)
	var calls int
	handle := idemlambda.EventBridge(f.Store, func(ctx context.Context, ev idemlambda.Event[events.CloudWatchEvent], tx *idem.Tx) error {
		if calls++; calls == 1 {
			panic("first delivery")
		}
		tx.Add(count(f, "evt-"+ev.Key), nil)
		return nil
	}, func(o *idemlambda.ConsumerOptions[events.CloudWatchEvent]) { o.Scope = "projector" })
	ev := events.CloudWatchEvent{ID: "ev-panic", Source: "orders", DetailType: "OrderCreated", Detail: []byte(`{}`)}
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("the panic left the handler: %v", p)
			}
		}()
		if err := handle(context.Background(), ev); err == nil || !strings.Contains(err.Error(), "first delivery") {
			t.Fatalf("the panicking delivery: %v, want an error carrying the panic", err)
		}
	}()
	if err := handle(context.Background(), ev); err != nil {
		t.Fatalf("the retry: %v, want it run at once (the lease lapsed)", err)
	}
	if got := times(f, "evt-"+ev.ID); got != 1 {
		t.Fatalf("event took effect %d times", got)
	}
}

// TestAPanickingOptionFailsItsMessageAlone: ConsumerOptions.Key and
// Fingerprint are the user's code as the handler is: a panic in them fails
// its own message, and the batch's others are processed.
func TestAPanickingOptionFailsItsMessageAlone(t *testing.T) {
	f := newFixture(t)
	handle := consumer(f, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) {
		o.Fingerprint = func(m *events.SQSMessage) any {
			if m.Body == "bad-option" {
				var p *struct{ X int }
				return p.X //nolint:govet // nilness: a nil pointer, the option's own bug, which the test provokes
			}
			return m.Body
		}
	})
	var resp events.SQSEventResponse
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("the panic left the handler: %v", p)
			}
		}()
		resp, _ = handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("a", "order-a"), message("p", "bad-option")}})
	}()
	if got := failedIDs(resp); len(got) != 1 || got[0] != "p" || times(f, "order-a") != 1 {
		t.Fatalf("failures %v, order-a %d times; want only p failed", got, times(f, "order-a"))
	}
}
