package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ItemAttribute is the attribute of an order item that holds the W3C
// traceparent of the span that wrote it. DynamoDB Streams carry no trace
// context, and the pipe sends the stream record as the message body, so
// the item itself is how an order's trace reaches the consumer that counts
// it: the record's NewImage holds it.
const ItemAttribute = "traceparent"

// Parent is the traceparent of the span in ctx when it is sampled, for
// ItemAttribute; "" when there is none (tracing off), so that nothing is
// written.
func Parent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"]
}

// Link links the span in ctx to the span named by traceparent (Parent's):
// a consumer's span to the request that made its event. One that does not
// parse, or a span that does not record (tracing off), is left alone.
func Link(ctx context.Context, traceparent string) {
	span := trace.SpanFromContext(ctx)
	if traceparent == "" || !span.IsRecording() {
		return
	}
	from := trace.SpanContextFromContext(propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent}))
	if from.IsValid() {
		span.AddLink(trace.Link{SpanContext: from})
	}
}
