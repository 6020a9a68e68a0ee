package idem_test

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
)

// count is the effect a message has: a counter incremented with ADD, which
// counts twice if the message is processed twice.
func (f *fixture) count(id string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(f.business),
		Key: map[string]types.AttributeValue{
			"scope":    &types.AttributeValueMemberS{Value: "projection"},
			"order_id": &types.AttributeValueMemberS{Value: id},
		},
		UpdateExpression:          aws.String("ADD times :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}}
}

func (f *fixture) times(id string) int {
	f.t.Helper()
	item := f.order("projection", id)
	if item == nil {
		return 0
	}
	n, _ := strconv.Atoi(item["times"].(*types.AttributeValueMemberN).Value)
	return n
}

func (f *fixture) consumer(optFns ...func(*idem.SQSOptions)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	f.t.Helper()
	h, err := f.newStore().SQS(func(ctx context.Context, msg events.SQSMessage, tx *idem.Tx) error {
		switch msg.Body {
		case "poison":
			return errors.New("cannot parse")
		case "panic":
			var m map[string]int
			m["boom"]++ // a nil map: the handler's own bug
		}
		tx.Add(f.count(msg.Body), nil)
		return nil
	}, append([]func(*idem.SQSOptions){func(o *idem.SQSOptions) { o.Scope = "projector" }}, optFns...)...)
	if err != nil {
		f.t.Fatal(err)
	}
	return h
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
	handle := f.consumer()
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
		if got := f.times("order-" + strconv.Itoa(i)); got != 1 {
			t.Errorf("message %d took effect %d times", i, got)
		}
	}
}

func TestPoisonMessageFailsAlone(t *testing.T) {
	f := newFixture(t)
	handle := f.consumer()
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
		if got := f.times(id); got != 1 {
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
	handle := f.consumer(func(o *idem.SQSOptions) { o.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) })
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
		if got := f.times(id); got != 1 {
			t.Errorf("%s took effect %d times, want 1", id, got)
		}
	}
	if n, ok := f.record("projector", "p")["lease_until"].(*types.AttributeValueMemberN); !ok || n.Value != "0" {
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
	f.consumer()(context.Background(), batch)
	resp, err := f.consumer()(context.Background(), batch)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %v, %v; want all skipped as done", resp, err)
	}
	if f.times("order-a") != 1 || f.times("order-b") != 1 {
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
	resp, _ := f.consumer()(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		fifo("1", "order-1"), fifo("2", "poison"), fifo("3", "order-3"),
	}})
	if got := fmt.Sprint(failedIDs(resp)); got != "[2 3]" {
		t.Fatalf("failures %s, want [2 3]: order must hold", got)
	}
	if f.times("order-1") != 1 || f.times("order-3") != 0 {
		t.Fatal("FIFO processing went past a failure")
	}
}

func TestProducerIDDeduplicatesAcrossMessages(t *testing.T) {
	f := newFixture(t)
	handle := f.consumer(func(o *idem.SQSOptions) { o.IDAttribute = "event_id" })
	withID := func(messageID, eventID string) events.SQSMessage {
		m := message(messageID, "order-x")
		m.MessageAttributes = map[string]events.SQSMessageAttribute{"event_id": {StringValue: aws.String(eventID), DataType: "String"}}
		return m
	}
	// A producer that retried its send made two messages of one event.
	resp, _ := handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{withID("m1", "evt-1"), withID("m2", "evt-1")}})
	if len(resp.BatchItemFailures) != 0 || f.times("order-x") != 1 {
		t.Fatalf("failures %v, effect %d times: want one effect", resp.BatchItemFailures, f.times("order-x"))
	}
	resp, _ = handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m3", "order-x")}})
	if got := failedIDs(resp); len(got) != 1 {
		t.Fatalf("a message without the attribute: failures %v, want it failed", got)
	}
}

// A consumer without a scope is a mistake in its options, found when it is
// built, not on its first message: ErrInvalidOptions, and ErrEmptyScope for
// what was wrong.
func TestConsumersNeedAScope(t *testing.T) {
	f := newFixture(t)
	_, sqsErr := f.store.SQS(func(context.Context, events.SQSMessage, *idem.Tx) error { return nil })
	_, ebErr := f.store.EventBridge("", func(context.Context, events.CloudWatchEvent, *idem.Tx) error { return nil })
	_, fnErr := idem.Function(f.store, func(context.Context, string) (string, error) { return "", nil },
		func(o *idem.FunctionOptions[string]) { o.Key = func(s string) string { return s } })
	for name, err := range map[string]error{"SQS": sqsErr, "EventBridge": ebErr, "Function": fnErr} {
		if !errors.Is(err, idem.ErrInvalidOptions) || !errors.Is(err, idem.ErrEmptyScope) {
			t.Errorf("%s without a scope: %v, want ErrInvalidOptions and ErrEmptyScope", name, err)
		}
	}
}

func TestEventBridgeEventsTakeEffectOnce(t *testing.T) {
	f := newFixture(t)
	handle, err := f.store.EventBridge("projector", func(ctx context.Context, ev events.CloudWatchEvent, tx *idem.Tx) error {
		tx.Add(f.count("evt-"+ev.ID), nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ev := events.CloudWatchEvent{ID: "7bf73129-1428-4cd3", Source: "orders", DetailType: "OrderCreated", Detail: []byte(`{"order":"o1"}`)}
	for range 3 {
		if err := handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.times("evt-" + ev.ID); got != 1 {
		t.Fatalf("event took effect %d times", got)
	}
}

// TestPanickingEventIsAnError: an EventBridge handler that panics returns an
// error carrying the panic (so Lambda retries the event), its lease lapsed;
// the retry runs at once and takes effect once.
func TestPanickingEventIsAnError(t *testing.T) {
	f := newFixture(t)
	var calls int
	handle, err := f.store.EventBridge("projector", func(ctx context.Context, ev events.CloudWatchEvent, tx *idem.Tx) error {
		if calls++; calls == 1 {
			panic("first delivery")
		}
		tx.Add(f.count("evt-"+ev.ID), nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
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
	if got := f.times("evt-" + ev.ID); got != 1 {
		t.Fatalf("event took effect %d times", got)
	}
}
