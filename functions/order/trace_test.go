package main

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/functions/internal/tracing"
)

// tracedServer is the function as its cold start makes it from the
// environment (fast says ORDER_FAST_PATH), traced into memory, its handler
// the one lambda.Start runs.
func tracedServer(t *testing.T, fast string) (*fixture, *tracetest.SpanRecorder) {
	t.Helper()
	f := newFixture(t)
	for k, v := range map[string]string{
		"IDEMPOTENCY_TABLE": f.tables[0], "ORDERS_TABLE": f.tables[1], "ORDER_FAST_PATH": fast,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
	} {
		t.Setenv(k, v)
	}
	tr, rec := apitest.Traced()
	s, err := newServer(context.Background(), tr, func(o *dynamodb.Options) { o.HTTPClient = calls })
	if err != nil {
		t.Fatal(err)
	}
	s.log = slog.New(slog.DiscardHandler)
	f.Handler = s.handler(tr)
	return f, rec
}

// traceparentOf reads an order's traceparent from OrdersTable ("" when
// the item has none).
func (f *fixture) traceparentOf(t *testing.T, scope, id string) string {
	t.Helper()
	out, err := f.raw.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.tables[1]), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: scope}, attrOrderID: &types.AttributeValueMemberS{Value: id}}})
	if err != nil || out.Item == nil {
		t.Fatalf("order %s: %v %v", id, out, err)
	}
	v, _ := out.Item[tracing.ItemAttribute].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

// traceparent is the W3C header naming sp.
func traceparent(sp sdktrace.ReadOnlySpan) string {
	sc := sp.SpanContext()
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// An order created through POST /orders carries the traceparent of the
// Store's span that committed it, on either path (claim then commit, or
// one transaction), and one created through PUT that of its invocation's
// span: the stream record's new image hands it to the consumer, which
// links to it. Neither answer nor GET shows it. The Store's DynamoDB
// calls are its span's children.
func TestAnOrderCarriesTheTraceparentOfTheSpanThatWroteIt(t *testing.T) {
	for _, tc := range []struct {
		fast, store string
		calls       []string
	}{
		{"false", "idem.Do", []string{"DynamoDB.PutItem", "DynamoDB.TransactWriteItems"}},
		{"true", "idem.DoAtomic", []string{"DynamoDB.TransactWriteItems"}},
	} {
		t.Run("fast path "+tc.fast, func(t *testing.T) {
			f, rec := tracedServer(t, tc.fast)
			created := f.Send("POST", "/orders", "alice", "k-1", tea)
			put := f.Send("PUT", "/orders/o-put-1", "alice", "", tea)
			if created.StatusCode != 201 || put.StatusCode != 201 {
				t.Fatalf("POST %d %s, PUT %d %s", created.StatusCode, created.Body, put.StatusCode, put.Body)
			}
			id := orderID(t, created)
			got := f.Send("GET", "/orders/"+id, "alice", "", "")
			spans := apitest.Spans(rec.Ended())
			post := spans.Roots("POST /orders")
			if len(post) != 1 || len(spans.Children(post[0])) != 1 {
				t.Fatalf("POST /orders traces %v, want one with the Store's span", spans.Names())
			}
			store := spans.Children(post[0])[0]
			if store.Name() != tc.store || !slices.Equal(spans.Children(store).Names(), tc.calls) {
				t.Errorf("POST /orders:\n%s want %s over %v", spans.Tree(post[0]), tc.store, tc.calls)
			}
			if tp := f.traceparentOf(t, "alice", id); tp != traceparent(store) {
				t.Errorf("the POSTed order's traceparent %q, want %s's %q", tp, tc.store, traceparent(store))
			}
			puts := spans.Roots("PUT /orders/{order_id}")
			if tp := f.traceparentOf(t, "alice", "o-put-1"); len(puts) != 1 || tp != traceparent(puts[0]) {
				t.Errorf("the PUT order's traceparent %q, want its invocation's span's (%d PUT traces)", tp, len(puts))
			}
			for _, r := range []string{created.Body, put.Body, got.Body} {
				if slices.ContainsFunc([]string{"traceparent", "00-"}, func(s string) bool { return strings.Contains(r, s) }) {
					t.Errorf("an answer shows the trace context: %s", r)
				}
			}
		})
	}
}

// Untraced, an order is written as it always was: no traceparent.
func TestAnUntracedOrderHasNoTraceparent(t *testing.T) {
	f := newFixture(t)
	created := f.Send("POST", "/orders", "alice", "k-1", tea)
	f.Send("PUT", "/orders/o-put-1", "alice", "", tea)
	if tp := f.traceparentOf(t, "alice", orderID(t, created)); tp != "" {
		t.Errorf("POSTed untraced: traceparent %q, want none", tp)
	}
	if tp := f.traceparentOf(t, "alice", "o-put-1"); tp != "" {
		t.Errorf("PUT untraced: traceparent %q, want none", tp)
	}
}
