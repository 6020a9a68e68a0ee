package apitest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkeys/idem/functions/internal/tracing"
)

// Traced is tracing on, every span kept in memory as it ends, as the
// functions' own exporter would get it.
func Traced() (*tracing.Tracing, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	return tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), false), rec
}

// Spans are ended spans, for assertions on their trees.
type Spans []sdktrace.ReadOnlySpan

// Roots are the spans named name whose parent is not among s, in the
// order they started.
func (s Spans) Roots(name string) Spans {
	var out Spans
	for _, sp := range s {
		if sp.Name() == name && !slices.ContainsFunc(s, func(p sdktrace.ReadOnlySpan) bool { return p.SpanContext().Equal(sp.Parent()) }) {
			out = append(out, sp)
		}
	}
	return out.sorted()
}

// Children are p's children among s, in the order they started.
func (s Spans) Children(p sdktrace.ReadOnlySpan) Spans {
	var out Spans
	for _, sp := range s {
		if sp.Parent().Equal(p.SpanContext()) {
			out = append(out, sp)
		}
	}
	return out.sorted()
}

// Trace is the spans of p's trace among s, in the order they started.
func (s Spans) Trace(p sdktrace.ReadOnlySpan) Spans {
	var out Spans
	for _, sp := range s {
		if sp.SpanContext().TraceID() == p.SpanContext().TraceID() {
			out = append(out, sp)
		}
	}
	return out.sorted()
}

func (s Spans) sorted() Spans {
	slices.SortStableFunc(s, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return s
}

// Names are the spans' names, in their order.
func (s Spans) Names() []string {
	out := make([]string, len(s))
	for i, sp := range s {
		out[i] = sp.Name()
	}
	return out
}

// Attr is the span's attribute key as text ("" when it has none).
func Attr(sp sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range sp.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// Events are the span's events, each its name and attributes as one line.
func Events(sp sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, ev := range sp.Events() {
		line := ev.Name
		for _, kv := range ev.Attributes {
			line += " " + string(kv.Key) + "=" + kv.Value.String()
		}
		out = append(out, line)
	}
	return out
}

// CheckNoSecret fails t for each span whose name, attributes, events,
// status or links hold one of secrets.
func (s Spans) CheckNoSecret(t testing.TB, secrets ...string) {
	t.Helper()
	for _, sp := range s {
		texts := []string{sp.Name(), sp.Status().Description}
		for _, kv := range sp.Attributes() {
			texts = append(texts, string(kv.Key), kv.Value.String())
		}
		texts = append(texts, Events(sp)...)
		for _, l := range sp.Links() {
			for _, kv := range l.Attributes {
				texts = append(texts, string(kv.Key), kv.Value.String())
			}
		}
		for _, text := range texts {
			for _, secret := range secrets {
				if strings.Contains(text, secret) {
					t.Errorf("span %s carries %q in %q", sp.Name(), secret, text)
				}
			}
		}
	}
}

// Tree prints p's trace among s, for a failure's message.
func (s Spans) Tree(p sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	var walk func(sp sdktrace.ReadOnlySpan, depth int)
	walk = func(sp sdktrace.ReadOnlySpan, depth int) {
		fmt.Fprintf(&b, "%s%s %v %v\n", strings.Repeat("  ", depth), sp.Name(), sp.Status().Code, Events(sp))
		for _, c := range s.Children(sp) {
			walk(c, depth+1)
		}
	}
	walk(p, 0)
	return b.String()
}
