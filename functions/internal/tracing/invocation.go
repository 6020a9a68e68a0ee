package tracing

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// HTTPHandler is an HTTP API function's handler, as lambda.Start takes it.
type HTTPHandler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// SQSHandler is a queue consumer's handler, as lambda.Start takes it.
type SQSHandler = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// BatchItemFailures is the attribute of a consumer's invocation span that
// counts the messages it reported failed (SQS receives them again).
const BatchItemFailures = attribute.Key("batch_item_failures")

// HTTP makes each invocation of h a server span named by its route key
// ("POST /charges"), with the method, the route, the status, the
// invocation id and whether it was the environment's first: never the
// path's values, a header, the query or the body. A 5xx, a handler's error
// (its Go type only) and a panic are Error. Off, it is h itself.
func HTTP(t *Tracing, h HTTPHandler) HTTPHandler {
	if t == nil {
		return h
	}
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, err error) {
		method, route, _ := strings.Cut(req.RouteKey, " ")
		ctx, span := t.start(ctx, req.RouteKey, trace.SpanKindServer,
			semconv.FaaSTriggerHTTP, semconv.HTTPRequestMethodKey.String(method), semconv.HTTPRoute(route))
		defer t.finish(ctx, span, &err)
		resp, err = h(ctx, req)
		span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
		if resp.StatusCode >= 500 {
			span.SetStatus(codes.Error, "")
		}
		return resp, err
	}
}

// SQS makes each invocation of h a consumer span, "process <queue>", with
// the batch's size, the messages reported failed, the invocation id and
// whether it was the environment's first. The messages' own spans (the
// Store's) are its children, each linked to the span that made its event
// (Link). Off, it is h itself.
func SQS(t *Tracing, h SQSHandler) SQSHandler {
	if t == nil {
		return h
	}
	return func(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
		queue := ""
		if len(ev.Records) > 0 {
			queue = ev.Records[0].EventSourceARN[strings.LastIndexByte(ev.Records[0].EventSourceARN, ':')+1:]
		}
		ctx, span := t.start(ctx, strings.TrimSpace("process "+queue), trace.SpanKindConsumer,
			semconv.FaaSTriggerPubSub, semconv.MessagingSystemAWSSQS, semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"), semconv.MessagingDestinationName(queue),
			semconv.MessagingBatchMessageCount(len(ev.Records)))
		defer t.finish(ctx, span, &err)
		resp, err = h(ctx, ev)
		span.SetAttributes(BatchItemFailures.Int(len(resp.BatchItemFailures)))
		return resp, err
	}
}

// traceIDKey is where aws-lambda-go puts the invocation's X-Ray trace
// header (Lambda-Runtime-Trace-Id) in the handler's context: a plain
// string key, its API.
const traceIDKey = "x-amzn-trace-id"

// start begins an invocation's span: the child of the invocation's X-Ray
// segment where Lambda gives one (active tracing: the trace X-Ray shows,
// sampled as X-Ray decided), else a root.
func (t *Tracing) start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if h, _ := ctx.Value(traceIDKey).(string); h != "" {
		ctx = xray.Propagator{}.Extract(ctx, propagation.MapCarrier{"X-Amzn-Trace-Id": h})
	}
	attrs = append(attrs, semconv.FaaSColdstart(t.cold.first()))
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		attrs = append(attrs, semconv.FaaSInvocationID(lc.AwsRequestID))
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// finish ends an invocation's span, Error with the error's Go type (its
// text is the handler's, which may hold anything) or on a panic, which it
// passes on, and sends the spans where they are batched.
func (t *Tracing) finish(ctx context.Context, span trace.Span, err *error) {
	p := recover()
	switch {
	case p != nil:
		span.SetAttributes(semconv.ErrorTypeKey.String("panic"))
		span.SetStatus(codes.Error, "the handler panicked")
	case *err != nil:
		span.SetAttributes(semconv.ErrorTypeKey.String(fmt.Sprintf("%T", *err)))
		span.SetStatus(codes.Error, "the handler failed")
	}
	span.End()
	t.end(ctx)
	if p != nil {
		panic(p)
	}
}

// coldStart says once, to the first invocation of the environment, that
// it is the first.
type coldStart struct{ done atomic.Bool }

func (c *coldStart) first() bool { return !c.done.Swap(true) }
