package idemhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// A door adds no span of its own: a request it refuses before any call is
// an event on the request's own span (the server's), with the refusal's
// code and status only; one it hands to the store is the store's span,
// a child of the server's, whose status is Error for the handler's 5xx
// and Unset for its refusal, a 4xx answer like a 409 or a 422.
func TestADoorRequestIsTheStoresSpanAndARefusalAnEventOfTheServers(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := testbed.New(t, func(o *idem.Options) { o.TracerProvider = tp })
	h := idemhttp.Wrap(f.Store, nil, func(ctx context.Context, req idemhttp.Request[http.Request, struct{}], tx *idem.Tx) (idem.Response, error) {
		switch req.Event.URL.Query().Get("answer") {
		case "refuse":
			return idem.Response{}, &idemhttp.Refusal{StatusCode: 409, Code: "order_closed", Message: "order SECRET-closed"}
		case "fail":
			return idem.Response{StatusCode: 502, Body: []byte("upstream down")}, nil
		}
		return idem.Response{StatusCode: 201}, nil
	}, func(o *idemhttp.Options[http.Request]) { o.Scope = func(*http.Request) string { return "alice" } })
	// send serves one request under a server span, as otelhttp would,
	// and returns its status, the server's span and the store's (if any).
	send := func(query, key string) (int, sdktrace.ReadOnlySpan, sdktrace.ReadOnlySpan) {
		before := len(rec.Ended())
		ctx, server := tp.Tracer("server").Start(context.Background(), "POST /orders")
		r := httptest.NewRequest("POST", "/orders?"+query, strings.NewReader(`{"card":"SECRET-body"}`)).WithContext(ctx)
		if key != "" {
			r.Header.Set(idemhttp.HeaderIdempotencyKey, key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		server.End()
		ended := rec.Ended()[before:]
		var store sdktrace.ReadOnlySpan
		switch len(ended) {
		case 1:
		case 2:
			store = ended[0]
			if store.Parent().SpanID() != ended[1].SpanContext().SpanID() {
				t.Errorf("the store's span is not the server span's child")
			}
		default:
			t.Fatalf("%d spans for one request, want the server's and at most the store's", len(ended))
		}
		return w.Code, ended[len(ended)-1], store
	}
	code, server, store := send("", "")
	if code != 400 || store != nil {
		t.Fatalf("no key: %d, store span %v; want 400 and none", code, store)
	}
	want := attribute.NewSet(attribute.String("idem.refusal.code", "idempotency_key_missing"), attribute.Int("idem.status_code", 400))
	ev := server.Events()
	if len(ev) != 1 || ev[0].Name != "idem.refused" || attrsOf(ev[0].Attributes) != attrsOf(want.ToSlice()) {
		t.Fatalf("the server span's events %v, want idem.refused with its code and status alone", ev)
	}
	for _, c := range []struct {
		query  string
		code   int
		status codes.Code
	}{{"answer=refuse", 409, codes.Unset}, {"answer=fail", 502, codes.Error}, {"", 201, codes.Unset}} {
		code, server, store := send(c.query, "k-"+c.query)
		if code != c.code || store == nil || store.Name() != "idem.Do" || store.Status().Code != c.status || len(server.Events()) != 0 {
			t.Fatalf("%q: %d, store span %v with status %v, server events %v; want %d, the store's span with %v, no event", c.query, code, store, store.Status(), server.Events(), c.code, c.status)
		}
		for _, kv := range store.Attributes() {
			if strings.Contains(kv.Value.String(), "SECRET") {
				t.Errorf("%q: the store's span carries %v", c.query, kv)
			}
		}
		for _, e := range store.Events() {
			for _, kv := range e.Attributes {
				if strings.Contains(kv.Value.String(), "SECRET") {
					t.Errorf("%q: the store's event %s carries %v", c.query, e.Name, kv)
				}
			}
		}
	}
}

func attrsOf(kvs []attribute.KeyValue) string {
	set := attribute.NewSet(kvs...)
	return set.Encoded(attribute.DefaultEncoder())
}
