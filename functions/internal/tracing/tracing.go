// Package tracing is the functions' OpenTelemetry tracing: a span per
// invocation, the idempotency Store's span under it, the DynamoDB calls
// (otelaws) and the provider's HTTP calls (otelhttp) under that, and the
// trace context an order hands on to the consumer that counts it.
//
// A nil *Tracing is tracing off, and costs nothing: no SDK, no middleware
// on the AWS clients, no transport around the provider's, no wrapper
// around the handler; the Store then sees OpenTelemetry's default provider,
// on which it starts no span.
package tracing

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-sdk-go-v2/otelaws" //nolint:staticcheck // SA1019: deprecated for want of an owner, not replaced: it still makes the DynamoDB calls' spans
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of the invocation spans.
const scope = "github.com/idemkeys/idem/functions"

// Tracing is tracing on: an SDK provider, and whether its spans must be
// flushed at the end of each invocation.
type Tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	// flush: the provider batches its spans (to a collector), and Lambda
	// freezes the environment once the invocation returns, so a batch not
	// sent by then would wait, or be lost with the environment.
	flush bool
	cold  coldStart
}

// New traces on provider; flush says that its spans are batched and must
// be sent before each invocation returns.
func New(provider *sdktrace.TracerProvider, flush bool) *Tracing {
	return &Tracing{provider: provider, tracer: provider.Tracer(scope), flush: flush}
}

// Provider is the provider for idem.Options.TracerProvider: nil when off,
// which leaves the Store on OpenTelemetry's default, where it starts no
// span.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.provider
}

// propagator is what goes out with a call: the W3C trace context alone.
// The provider is a third party: it gets a traceparent, which names the
// trace and nothing else, and no X-Ray header.
var propagator = propagation.TraceContext{}

// AWS adds otelaws' middleware to an AWS configuration's APIOptions: each
// call of a client made from it is a client span, the child of the span in
// the call's context. Its attributes are the service, operation, region,
// request id, status and, for DynamoDB, the table names (and a read's
// projection and consistency), never an item, a key or an expression's
// values. Off, it adds nothing.
func (t *Tracing) AWS(apiOptions *[]func(*middleware.Stack) error) {
	if t == nil {
		return
	}
	otelaws.AppendMiddlewares(apiOptions, otelaws.WithTracerProvider(t.provider), otelaws.WithTextMapPropagator(propagator))
}

// Transport wraps base (nil: http.DefaultTransport) with otelhttp: each
// request is a client span, the child of the span in the request's
// context, whose traceparent goes out with it. Its attributes are the
// method, the status, and the URL cut to its route (route): the
// provider's URLs name its objects in their path and query
// (/v1/customers/cus_…, ?customer=cus_…), which a trace must not carry
// any more than a log does; never a header either, where the secret key
// and the Idempotency-Key are. The request itself goes out whole. Off, it
// returns base as it is.
func (t *Tracing) Transport(base http.RoundTripper) http.RoundTripper {
	if t == nil {
		return base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return routeOnly{otelhttp.NewTransport(sendWhole{base}, otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(propagator))}
}

// wholeURL is the context key under which routeOnly hands the request's
// own URL past otelhttp to sendWhole.
type wholeURL struct{}

// routeOnly hands otelhttp the request with its URL cut to its route,
// since otelhttp records the URL it is given as url.full, and none of its
// options changes that attribute.
type routeOnly struct{ next http.RoundTripper }

func (t routeOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	shown := r.WithContext(context.WithValue(r.Context(), wholeURL{}, r.URL))
	// An opaque URL is written as it is: a path's braces would be escaped.
	shown.URL = &url.URL{Scheme: r.URL.Scheme, Host: r.URL.Host, Opaque: "//" + r.URL.Host + route(r.URL.EscapedPath())}
	return t.next.RoundTrip(shown)
}

// sendWhole sends the request otelhttp passes on under its own URL.
type sendWhole struct{ base http.RoundTripper }

func (t sendWhole) RoundTrip(r *http.Request) (*http.Response, error) {
	u, ok := r.Context().Value(wholeURL{}).(*url.URL)
	if !ok {
		return nil, errors.New("tracing: a request reached the traced transport without its URL")
	}
	sent := r.WithContext(r.Context())
	sent.URL = u
	return t.base.RoundTrip(sent)
}

// route is the route template of a provider path, with no query: Stripe's
// paths alternate a name and an object id after the version
// (/v1/customers/{id}/payment_methods/{id}). A name is kept only when it
// is lowercase letters and underscores; every other segment, and every
// segment of a path that does not begin with a version, is {id}.
func route(path string) string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	versioned := version.MatchString(segs[0])
	for i, seg := range segs {
		switch {
		case seg == "":
		case i == 0 && versioned:
		case versioned && i%2 == 1 && name.MatchString(seg):
		default:
			segs[i] = "{id}"
		}
	}
	return "/" + strings.Join(segs, "/")
}

var (
	version = regexp.MustCompile(`^v[0-9]+$`)
	name    = regexp.MustCompile(`^[a-z_]+$`)
)

// flushTimeout bounds the send of an invocation's spans: past it they are
// dropped rather than the answer held.
const flushTimeout = 2 * time.Second

// end sends the invocation's spans where they are batched.
func (t *Tracing) end(ctx context.Context) {
	if !t.flush {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	_ = t.provider.ForceFlush(ctx) // a failure is the SDK's to report (otel.Handle); the answer goes on
}

// Shutdown sends what is left and stops the provider.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
