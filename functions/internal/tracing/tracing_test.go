package tracing_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkeys/idem/functions/internal/tracing"
)

func same(a, b any) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }

func httpOK(status int) tracing.HTTPHandler {
	return func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: status}, nil
	}
}

// Off (a nil *Tracing), nothing is put between the function and its
// handler, its AWS clients or its HTTP client, the Store gets no provider,
// and what the order and the consumer call per request allocates nothing.
func TestOffAddsNothing(t *testing.T) {
	var off *tracing.Tracing
	h := httpOK(200)
	if !same(tracing.HTTP(off, h), h) {
		t.Error("HTTP(nil, h) is not h")
	}
	q := func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	}
	if !same(tracing.SQS(off, q), q) {
		t.Error("SQS(nil, h) is not h")
	}
	var opts []func(*middleware.Stack) error
	off.AWS(&opts)
	if len(opts) != 0 {
		t.Errorf("AWS added %d API options", len(opts))
	}
	if off.Transport(nil) != nil || off.Transport(http.DefaultTransport) != http.DefaultTransport {
		t.Error("Transport wrapped the transport")
	}
	if p := off.Provider(); p != nil {
		t.Errorf("Provider() = %v, want nil (the Store then starts no span)", p)
	}
	ctx := context.Background()
	if tp := tracing.Parent(ctx); tp != "" {
		t.Errorf("Parent with no span = %q", tp)
	}
	const tp = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
	if n := testing.AllocsPerRun(100, func() { tracing.Parent(ctx); tracing.Link(ctx, tp) }); n != 0 {
		t.Errorf("Parent and Link allocate %v times untraced, want 0", n)
	}
}

func recorded() (*tracing.Tracing, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	return tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), false), rec
}

func attrs(sp sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range sp.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// xrayHeader is Lambda's trace header of a sampled invocation.
const xrayHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

// An HTTP invocation is a server span named by its route key, the child of
// the invocation's X-Ray segment, with the method, the route, the status,
// the invocation id and the cold start: those attributes and no other.
func TestAnHTTPInvocationIsAServerSpanUnderLambdasSegment(t *testing.T) {
	tr, rec := recorded()
	h := tracing.HTTP(tr, httpOK(201))
	ctx := lambdacontext.NewContext(context.WithValue(context.Background(), "x-amzn-trace-id", xrayHeader), &lambdacontext.LambdaContext{AwsRequestID: "req-1"}) //nolint:staticcheck // SA1029: the plain string key aws-lambda-go's runtime sets, which the function reads
	req := events.APIGatewayV2HTTPRequest{RouteKey: "POST /charges", RawPath: "/charges", Body: "SECRET", Headers: map[string]string{"idempotency-key": "SECRET"}}
	// The spans are what is checked, not the answers.
	_, _ = h(ctx, req)
	_, _ = h(context.Background(), req)
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want one per invocation", len(spans))
	}
	sp := spans[0]
	want := map[string]string{"faas.trigger": "http", "http.request.method": "POST", "http.route": "/charges", "http.response.status_code": "201",
		"faas.coldstart": "true", "faas.invocation_id": "req-1"}
	if sp.Name() != "POST /charges" || sp.SpanKind() != trace.SpanKindServer || !reflect.DeepEqual(attrs(sp), want) || sp.Status().Code != codes.Unset {
		t.Errorf("span %s %v %v %v, want POST /charges, a server span, %v, Unset", sp.Name(), sp.SpanKind(), attrs(sp), sp.Status(), want)
	}
	if sp.SpanContext().TraceID().String() != "5759e988bd862e3fe1be46a994272793" || sp.Parent().SpanID().String() != "53995c3f42cd8ad8" {
		t.Errorf("trace %s, parent %s: want the X-Ray segment's", sp.SpanContext().TraceID(), sp.Parent().SpanID())
	}
	if second := attrs(spans[1]); second["faas.coldstart"] != "false" || spans[1].Parent().IsValid() {
		t.Errorf("second invocation %v, parent %v: want no cold start, and a root without a trace header", second, spans[1].Parent())
	}
}

// An invocation X-Ray did not sample is not recorded.
func TestAnInvocationXRayDidNotSampleIsNotRecorded(t *testing.T) {
	tr, rec := recorded()
	ctx := context.WithValue(context.Background(), "x-amzn-trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0") //nolint:staticcheck // SA1029: the plain string key aws-lambda-go's runtime sets, which the function reads
	// What is recorded is what is checked, not the answer.
	_, _ = tracing.HTTP(tr, httpOK(200))(ctx, events.APIGatewayV2HTTPRequest{RouteKey: "GET /x"})
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans recorded, want none", n)
	}
}

// A 5xx, a handler's error (its type, never its text) and a panic (passed
// on) are Error.
func TestAFailedInvocationIsAnError(t *testing.T) {
	tr, rec := recorded()
	_, _ = tracing.HTTP(tr, httpOK(503))(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: "GET /x"}) // the span is what is checked
	_, _ = tracing.HTTP(tr, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, errors.New("SECRET in the text")
	})(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: "GET /x"}) // the span is what is checked
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was not passed on")
			}
		}()
		_, _ = tracing.HTTP(tr, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			panic("SECRET")
		})(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: "GET /x"}) // the panic is what is checked
	}()
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	for i, want := range []string{"", "*errors.errorString", "panic"} {
		sp := spans[i]
		if sp.Status().Code != codes.Error || attrs(sp)["error.type"] != want {
			t.Errorf("span %d: %v %v, want Error with error.type %q", i, sp.Status(), attrs(sp), want)
		}
		texts := []string{sp.Status().Description}
		for _, v := range attrs(sp) {
			texts = append(texts, v)
		}
		if slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "SECRET") }) {
			t.Errorf("span %d carries the handler's text: %q", i, texts)
		}
	}
}

// A queue's invocation is a consumer span of its batch: its size and the
// messages it reported failed.
func TestAnSQSInvocationIsAConsumerSpanOfItsBatch(t *testing.T) {
	tr, rec := recorded()
	// The span is what is checked, not the answer.
	_, _ = tracing.SQS(tr, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "m2"}}}, nil
	})(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:stack-OrderEventsQueue-x"}, {MessageId: "m2"}}})
	sp := rec.Ended()[0]
	want := map[string]string{"faas.trigger": "pubsub", "messaging.system": "aws_sqs", "messaging.operation.type": "process", "messaging.operation.name": "process",
		"messaging.destination.name": "stack-OrderEventsQueue-x", "messaging.batch.message_count": "2", "batch_item_failures": "1", "faas.coldstart": "true"}
	if sp.Name() != "process stack-OrderEventsQueue-x" || sp.SpanKind() != trace.SpanKindConsumer || !reflect.DeepEqual(attrs(sp), want) {
		t.Errorf("span %s %v %v, want a consumer span with %v", sp.Name(), sp.SpanKind(), attrs(sp), want)
	}
}

// Batched spans (a collector's exporter) are sent before the invocation
// returns: Lambda may freeze the environment at once, or never thaw it.
func TestBatchedSpansAreSentBeforeTheInvocationReturns(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Hour))), true)
	_, _ = tracing.HTTP(tr, httpOK(200))(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: "GET /x"}) // the span is what is checked
	if n := len(exp.GetSpans()); n != 1 {
		t.Errorf("%d spans exported when the invocation returned, want its one", n)
	}
}

// Parent names a sampled span, Link links to it; nothing for an unsampled
// span, a span that does not record, or a traceparent that does not parse.
func TestParentAndLink(t *testing.T) {
	tr, rec := recorded()
	tracer := tr.Provider().Tracer("t")
	ctx, order := tracer.Start(context.Background(), "order")
	tp := tracing.Parent(ctx)
	sc := order.SpanContext()
	if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; tp != want {
		t.Fatalf("Parent = %q, want %q", tp, want)
	}
	unsampled := trace.ContextWithSpanContext(context.Background(), sc.WithTraceFlags(0))
	if got := tracing.Parent(unsampled); got != "" {
		t.Errorf("Parent of an unsampled span = %q, want none", got)
	}
	for _, in := range []string{tp, "", "00-garbage", "00-00000000000000000000000000000000-0000000000000000-01"} {
		cctx, consumer := tracer.Start(context.Background(), "consumer "+in)
		tracing.Link(cctx, in)
		consumer.End()
	}
	var links [][]sdktrace.Link
	for _, sp := range rec.Ended() {
		links = append(links, sp.Links())
	}
	if len(links[0]) != 1 || links[0][0].SpanContext.SpanID() != sc.SpanID() || links[0][0].SpanContext.TraceID() != sc.TraceID() {
		t.Errorf("links %v, want the order's span", links[0])
	}
	for i, l := range links[1:] {
		if len(l) != 0 {
			t.Errorf("case %d linked %v, want nothing", i+1, l)
		}
	}
}

// A provider request's span records the route it took, its ids and its
// query left out (/v1/customers/{id}, never /v1/customers/cus_…?expand=…),
// in url.full and everywhere else, while the provider gets the request
// whole, its traceparent with it.
func TestAProviderRequestsSpanRecordsItsRouteNotItsIds(t *testing.T) {
	var got []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RequestURI()+" "+strings.Join(r.Header.Values("traceparent"), ""))
	}))
	defer api.Close()
	tr, rec := recorded()
	c := &http.Client{Transport: tr.Transport(nil)}
	for path, route := range map[string]string{
		"/v1/customers/cus_SECRET1":                           "/v1/customers/{id}",
		"/v1/payment_methods/pm_card_SECRET":                  "/v1/payment_methods/{id}",
		"/v1/payment_intents?customer=cus_SECRET2&limit=100":  "/v1/payment_intents",
		"/v1/payment_intents/pi_SECRET3/confirm?x=SECRET":     "/v1/payment_intents/{id}/confirm",
		"/v1/customers/cus_SECRET4/payment_methods/pm_SECRET": "/v1/customers/{id}/payment_methods/{id}",
		"/v1/Odd%2FSECRET/x":                                  "/v1/{id}/{id}",
		"/SECRET":                                             "/{id}",
	} {
		rec.Reset()
		u := strings.Replace(api.URL, "//", "//user:SECRET@", 1) + path
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		spans := rec.Ended()
		if len(spans) != 1 {
			t.Fatalf("%s: %d spans, want 1", path, len(spans))
		}
		a := attrs(spans[0])
		if want := api.URL + route; a["url.full"] != want {
			t.Errorf("%s: url.full %q, want %q", path, a["url.full"], want)
		}
		if !strings.HasPrefix(got[len(got)-1], path+" 00-"+spans[0].SpanContext().TraceID().String()) {
			t.Errorf("the provider got %q, want %s and the span's traceparent", got[len(got)-1], path)
		}
		for k, v := range a {
			if strings.Contains(k+v, "SECRET") {
				t.Errorf("%s: the span carries %s=%s", path, k, v)
			}
		}
	}
}
