// Package idemhttp is pkg/idem's front door for net/http services (ECS,
// App Runner, the Lambda Web Adapter): Wrap turns a handler of the door's
// shape into an http.Handler that runs it once per Idempotency-Key.
//
//	mux.Handle("POST /orders/{id}", idemhttp.Wrap(store, parseOrder, createOrder,
//		func(o *idemhttp.Options) { o.Scope = caller }))
//
// Every front door of pkg/idem behaves alike; the Lambda doors are in
// package idemlambda, with the same Request, Handler, Parse and Options.
// A request passes the checks that write nothing first: 401 without a
// verified identity (Options.Scope), 413 over the body limit, 400 for a
// missing, invalid or repeated Idempotency-Key (bare, or quoted as the
// IETF draft has it), Parse's own refusal. The first request then runs the
// handler and stores its response with its writes; a retry gets the stored
// response, marked "Idempotent-Replayed: true"; a concurrent duplicate 409
// with Retry-After; the key with another request 422; a TransientError its
// status with Retry-After. Every error is RFC 9457 problem details
// (application/problem+json) with a stable code. A final 5xx the handler
// returns is sent as it is and not stored: its retry runs the handler again.
//
// The fingerprint takes the method, r.Pattern and its path values (the
// raw path outside a ServeMux pattern), the raw query and the body, JSON in
// canonical form.
package idemhttp

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/idemkeys/idem/pkg/httpapi"
	"github.com/idemkeys/idem/pkg/idem/internal/door"
)

// Doer is the part of *idem.Store the door calls: a fake of it tests a
// handler without DynamoDB.
type Doer = door.Doer

// Request is what a handler gets: the *http.Request (its body read once
// and readable again), Body as Parse made it, the caller's scope and the
// key.
type Request[B any] = door.Request[http.Request, B]

// Handler adds its business writes to tx and returns the response to store
// and send. An error lapses the lease and stores nothing (a TransientError
// names the status to answer); a final 5xx is sent and not stored.
type Handler[B any] = door.Handler[http.Request, B]

// Parse turns the body into the handler's value before the key is claimed;
// an error is the answer (a *Refusal as it says, any other 400).
type Parse[B any] = door.Parse[B]

// Options configure Wrap. Options.Scope is required: net/http verifies no
// identity of its own, so without it every request is 401. It reads the
// identity an authentication middleware in front verified (from the
// request's context, say), never a value the client sets.
type Options = door.Options[http.Request]

// Refusal is a Parse error that says its status and problem code.
type Refusal = httpapi.Refusal

// TransientError is a handler's failure the client should retry.
type TransientError = door.TransientError

// Header names of the IETF draft "The Idempotency-Key HTTP Header Field".
const (
	HeaderIdempotencyKey = door.HeaderIdempotencyKey
	HeaderReplayed       = door.HeaderReplayed
)

// ParseKey returns the key an Idempotency-Key header value carries: a bare
// token or the IETF draft's quoted Structured Field string, white space
// trimmed; several keys (a repeated header, comma-joined) are refused.
func ParseKey(value string) (string, error) { return door.ParseKey(value) }

// Wrap returns an http.Handler that runs h once per Idempotency-Key, as the
// package documentation says. parse may be nil (Body is then the zero
// value). It panics on Options out of range.
func Wrap[B any](s Doer, parse Parse[B], h Handler[B], optFns ...func(*Options)) http.Handler {
	c := door.NewConfig(nil, optFns)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := door.Serve(r.Context(), s, c, r, read(r, c.MaxBodyBytes), parse, h)
		header := w.Header()
		for k, v := range resp.Header {
			header.Set(k, v)
		}
		for _, cookie := range resp.Cookies {
			header.Add("Set-Cookie", cookie)
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(resp.Body)
	})
}

// read reads a request's body, up to one byte past the limit.
func read(r *http.Request, maxBody int) door.Inbound {
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBody)+1))
	refusal := httpapi.CheckSize(len(body), maxBody)
	if err != nil && refusal == nil {
		refusal = &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "invalid_body", Message: "the body could not be read"}
	}
	r.Body = io.NopCloser(bytes.NewReader(body)) // for a handler that reads it raw
	key := r.Header.Values(HeaderIdempotencyKey)
	route := r.Pattern
	if route == "" {
		route = r.URL.Path
	}
	return door.Inbound{
		Key: strings.Join(key, ","), HasKey: len(key) > 0,
		Method: r.Method, Route: door.Route(route, pathValues(r), r.URL.RawQuery),
		ContentType: r.Header.Get("Content-Type"), Body: body, Refusal: refusal,
	}
}

// pathValues are the values of the wildcards of r.Pattern ("{id}", "{rest...}").
func pathValues(r *http.Request) map[string]string {
	values := map[string]string{}
	for p := r.Pattern; ; {
		i := strings.IndexByte(p, '{')
		j := strings.IndexByte(p[i+1:], '}')
		if i < 0 || j < 0 {
			return values
		}
		name := strings.TrimSuffix(p[i+1:i+1+j], "...")
		if name != "$" {
			values[name] = r.PathValue(name)
		}
		p = p[i+1+j:]
	}
}
