package idemlambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// warnings are the WARN lines of a JSON log, decoded.
func warnings(t *testing.T, log *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["level"] == "WARN" {
			out = append(out, m)
		}
	}
	return out
}

// TestAMessageIDReusedWithAnotherBodyFailsOnEveryDelivery: an SQS message
// whose id was processed with another body (a producer that reused an id)
// is not skipped as processed: it is reported failed, with a WARN line
// naming it, on every delivery, so that it returns until the queue's
// redrive policy moves it to the dead-letter queue; the first body's
// effect stands alone, and the rest of its batch is processed.
func TestAMessageIDReusedWithAnotherBodyFailsOnEveryDelivery(t *testing.T) {
	f := newFixture(t)
	var log bytes.Buffer
	handle := consumer(f, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) {
		o.Logger = slog.New(slog.NewJSONHandler(&log, nil))
	})
	if resp, _ := handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m1", "order-a")}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("first: failures %v", failedIDs(resp))
	}
	for receive := 1; receive <= 3; receive++ {
		log.Reset()
		resp, err := handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m1", "order-b"), message("m2", "order-c")}})
		if got := fmt.Sprint(failedIDs(resp)); err != nil || got != "[m1]" {
			t.Fatalf("receive %d: failures %s (%v), want [m1]", receive, got, err)
		}
		w := warnings(t, &log)
		if len(w) != 1 || w[0]["message_id"] != "m1" || !strings.Contains(w[0]["msg"].(string), "another body") || !strings.Contains(w[0]["error"].(string), "different request") {
			t.Fatalf("receive %d: warnings %v, want one naming m1 and the reused id", receive, w)
		}
	}
	if a, b, c := times(f, "order-a"), times(f, "order-b"), times(f, "order-c"); a != 1 || b != 0 || c != 1 {
		t.Fatalf("order-a %d, order-b %d, order-c %d times; want 1, 0, 1", a, b, c)
	}
}

// TestAnEventIDReusedWithAnotherDetailIsAnErrorOnEveryRetry: an
// EventBridge event whose id was processed with another detail returns
// idem.ErrFingerprintMismatch, with a WARN line, on every retry, so that
// Lambda sends it to the on-failure destination once its retries are
// spent; the first detail's effect stands alone.
func TestAnEventIDReusedWithAnotherDetailIsAnErrorOnEveryRetry(t *testing.T) {
	f := newFixture(t)
	var log bytes.Buffer
	handle := idemlambda.EventBridge(f.Store, func(ctx context.Context, ev idemlambda.Event[events.CloudWatchEvent], tx *idem.Tx) error {
		tx.Add(count(f, "evt-"+string(ev.Event.Detail)), nil)
		return nil
	}, func(o *idemlambda.ConsumerOptions[events.CloudWatchEvent]) {
		o.Scope = "projector"
		o.Logger = slog.New(slog.NewJSONHandler(&log, nil))
	})
	ev := events.CloudWatchEvent{ID: "ev-1", Source: "orders", DetailType: "OrderCreated", Detail: []byte(`{"order":"o1"}`)}
	if err := handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	ev.Detail = []byte(`{"order":"o2"}`)
	for retry := range 3 {
		log.Reset()
		if err := handle(context.Background(), ev); !errors.Is(err, idem.ErrFingerprintMismatch) {
			t.Fatalf("retry %d: %v, want ErrFingerprintMismatch", retry, err)
		}
		if w := warnings(t, &log); len(w) != 1 || w[0]["event_id"] != "ev-1" || !strings.Contains(w[0]["msg"].(string), "another body") {
			t.Fatalf("retry %d: warnings %v, want one naming ev-1", retry, w)
		}
	}
	if a, b := times(f, `evt-{"order":"o1"}`), times(f, `evt-{"order":"o2"}`); a != 1 || b != 0 {
		t.Fatalf("o1 %d, o2 %d times; want 1 and 0", a, b)
	}
}

// TestAFunctionKeyReusedWithAnotherInputIsAnErrorOnEveryCall: Function
// returns idem.ErrFingerprintMismatch for a key reused with another input,
// on every call, and runs nothing.
func TestAFunctionKeyReusedWithAnotherInputIsAnErrorOnEveryCall(t *testing.T) {
	f := newFixture(t)
	type input struct{ Key, Order string }
	runs := 0
	h := idemlambda.Function(f.Store, func(ctx context.Context, ev idemlambda.Event[input], tx *idem.Tx) (string, error) {
		runs++
		return "made " + ev.Event.Order, nil
	}, func(o *idemlambda.ConsumerOptions[input]) {
		o.Scope = "shipper"
		o.Key = func(in *input) (string, error) { return in.Key, nil }
	})
	if out, err := h(context.Background(), input{"k1", "o1"}); err != nil || out != "made o1" {
		t.Fatalf("first: %q %v", out, err)
	}
	for call := range 2 {
		if _, err := h(context.Background(), input{"k1", "o2"}); !errors.Is(err, idem.ErrFingerprintMismatch) || runs != 1 {
			t.Fatalf("call %d: %v after %d runs, want ErrFingerprintMismatch and no run", call, err, runs)
		}
	}
}
