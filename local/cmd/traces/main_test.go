package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// writeTraces writes, with the exporter the functions use, a cold start's
// call, an invocation (its Store span, a DynamoDB call, an event between
// calls, a link), and calls under a span that never ends (a killed
// process's), then a partial line.
func writeTraces(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(f))
	if err != nil {
		t.Fatal(err)
	}
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "order")))).Tracer("test")
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	_, cold := tracer.Start(context.Background(), "DynamoDB.DescribeTable", oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithTimestamp(ms(0)))
	cold.End(oteltrace.WithTimestamp(ms(3)))

	ctx, inv := tracer.Start(context.Background(), "POST /orders", oteltrace.WithSpanKind(oteltrace.SpanKindServer), oteltrace.WithTimestamp(ms(10)),
		oteltrace.WithAttributes(attribute.String("http.route", "/orders"), attribute.Bool("faas.coldstart", true)))
	sctx, do := tracer.Start(ctx, "idem.Do", oteltrace.WithTimestamp(ms(11)), oteltrace.WithLinks(oteltrace.Link{SpanContext: cold.SpanContext()}),
		oteltrace.WithAttributes(attribute.String("idem.path", "do"), attribute.String("idem.key_hash", "48ecc54d9fb941fb"), attribute.String("idem.outcome", "executed"),
			attribute.Bool("idem.cache_hit", false)))
	_, put := tracer.Start(sctx, "DynamoDB.PutItem", oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithTimestamp(ms(12)),
		oteltrace.WithAttributes(attribute.StringSlice("aws.dynamodb.table_names", []string{"local-IdempotencyTable"}), attribute.Int("http.response.status_code", 400),
			attribute.String("aws.region", "us-east-1"), attribute.String("error.type", "*http.ResponseError")))
	put.SetStatus(codes.Error, "https response error StatusCode: 400, RequestID: r-1, ConditionalCheckFailedException: The conditional request failed")
	put.End(oteltrace.WithTimestamp(ms(14)))
	do.AddEvent("idem.claim", oteltrace.WithTimestamp(ms(15)), oteltrace.WithAttributes(attribute.String("idem.result", "won"), attribute.Int("idem.attempt", 1)))
	_, get := tracer.Start(sctx, "HTTP GET", oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithTimestamp(ms(16)),
		oteltrace.WithAttributes(attribute.String("url.full", "http://127.0.0.1:41234/v1/payment_intents?limit=100"), attribute.Int("http.response.status_code", 200)))
	get.End(oteltrace.WithTimestamp(ms(18)))
	do.End(oteltrace.WithTimestamp(ms(20)))
	inv.SetAttributes(attribute.Int("http.response.status_code", 201))
	inv.End(oteltrace.WithTimestamp(ms(21)))

	kctx, _ := tracer.Start(context.Background(), "idem.Do", oteltrace.WithTimestamp(ms(30))) // killed: never ends
	_, claim := tracer.Start(kctx, "DynamoDB.PutItem", oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithTimestamp(ms(31)))
	claim.End(oteltrace.WithTimestamp(ms(33)))
	if _, err := f.WriteString(`{"Name":"half a li`); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// The file prints as trees, oldest first: each span with its outcome, its
// table or path, its status, a cold start, its error's cause and its
// duration, its events and children in the order they happened; a span
// whose parent never ended under a line that says so; a cold start's own
// call and the partial line left out and counted.
func TestATracesFilePrintsAsTrees(t *testing.T) {
	path := writeTraces(t)
	var out, errs bytes.Buffer
	if code := run([]string{"-f", path}, &out, &errs); code != 0 || errs.Len() > 0 {
		t.Fatalf("run: %d %s", code, errs.String())
	}
	got := regexpTraceIDs(out.String())
	want := `trace …  order
POST /orders  201  cold start  11.0ms
  idem.Do  idem.outcome=executed  idem.key_hash=48ecc54d9fb941fb  9.0ms
    ↪ linked to trace … span …
    DynamoDB.PutItem  local-IdempotencyTable  400  ERROR ConditionalCheckFailedException: The conditional request failed  2.0ms
    · idem.claim idem.result=won idem.attempt=1
    HTTP GET  /v1/payment_intents?limit=100  200  2.0ms

trace …  order
(span …: not recorded, it never ended)
  DynamoDB.PutItem  2.0ms

(1 traces of calls outside any invocation left out: -all shows them)
(1 lines that are not spans skipped)
`
	if got != want {
		t.Errorf("printed:\n%s\nwant:\n%s", got, want)
	}
	out.Reset()
	run([]string{"-f", path, "-n", "1", "-all"}, &out, &errs)
	if s := out.String(); strings.Count(s, "trace ") != 1 || !strings.Contains(s, "not recorded") {
		t.Errorf("-n 1 -all printed:\n%s\nwant the last trace alone", s)
	}
}

// regexpTraceIDs hides the ids a run draws.
func regexpTraceIDs(s string) string {
	for _, v := range volatile[1:3] {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}
