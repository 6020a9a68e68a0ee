// Package idemhttp is pkg/idem's front door for net/http services (ECS,
// App Runner, the Lambda Web Adapter): Wrap turns a handler of the door's
// shape into an http.Handler that runs it once per Idempotency-Key.
//
//	mux.Handle("POST /orders/{id}", idemhttp.Wrap(store, parseOrder, createOrder,
//		func(o *idemhttp.Options[http.Request]) { o.Scope = caller }))
//
// Every front door of pkg/idem behaves alike: the Lambda doors of package
// idemlambda take the same Request, Handler, Parse and Options, defined
// here, with their event types for E.
// A request passes the checks that write nothing first: 401 without a
// verified identity usable as a scope (Options.Scope), 413 over the body limit, 400 for a
// missing, invalid or repeated Idempotency-Key (bare, or quoted as the
// IETF draft has it), Parse's own refusal. The first request then runs the
// handler and stores its response with its writes; a retry gets the stored
// response, marked "Idempotent-Replayed: true"; a concurrent duplicate 409
// with Retry-After; the key with another request 422; a TransientError its
// status with Retry-After. Every error is RFC 9457 problem details
// (application/problem+json) with a stable code. A final 5xx the handler
// returns is sent as it is and not stored: its retry runs the handler again.
//
// The fingerprint takes the method, r.Pattern and its path values (and
// the path itself under a subtree pattern, one that ends in "/"; the raw
// path outside a ServeMux pattern), the raw query and the body, JSON in
// canonical form.
package idemhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/internal/door"
)

// Doer is the part of *idem.Store a door calls: a fake of it tests a
// handler without DynamoDB.
type Doer interface {
	Do(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error)
	DoAtomic(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error)
}

// Request is what every HTTP door hands its handler once the checks that
// write nothing have passed. E is the door's request type: http.Request
// here, an API Gateway, function URL or ALB event in idemlambda.
type Request[E, B any] struct {
	// Event is the request as it came, its body decoded from base64 (an
	// *http.Request's body read once, and readable again, its context the
	// work's, as ctx is).
	Event *E
	// Body is the body as the door's Parse made it (the zero value when
	// Parse is nil).
	Body B
	// Scope is the verified caller, Key the idempotency key within it:
	// what to derive a downstream key from (idem.DownstreamKey).
	Scope, Key string
}

// Handler is every HTTP door's handler: it adds its business writes to tx
// and returns the response to store and send. An error lapses the lease
// and stores nothing: a *TransientError is answered with its status and
// Retry-After, a *Refusal with its own status, any other error 503 with
// Retry-After. A final 5xx response is sent and not stored either, so the
// retry runs the handler again.
type Handler[E, B any] func(ctx context.Context, req Request[E, B], tx *idem.Tx) (idem.Response, error)

// Parse turns a request's body into the handler's value before the key is
// claimed, so that a refusal writes nothing and the client may correct the
// request under the same key. It runs once. Its error is the answer: a
// *Refusal as it says, any other error a 400 "invalid_body".
type Parse[B any] func(body []byte) (B, error)

// Options configure every HTTP door. The zero value of each field means its
// default.
type Options[E any] struct {
	// Scope reads the caller from the verified identity on the request,
	// never from a value the client sets (a header, the body). An identity
	// that cannot be a scope answers 401: "", one over
	// idem.MaxScopeLength, or one that is not valid UTF-8 (an auth proxy's
	// Latin-1 header), logged as a warning with its cause. Wrap has no default: net/http
	// verifies no identity of its own, so it reads what an authentication
	// middleware in front verified (from the request's context, say). Each
	// of idemlambda's doors has its own default.
	Scope func(ev *E) string
	// MaxBodyBytes refuses larger bodies with 413 before anything is
	// written (default 64 KiB). A negative value panics when the door is
	// built, with an error that matches idem.ErrInvalidOptions.
	MaxBodyBytes int
	// Atomic runs the handler with DoAtomic instead of Do: one round trip,
	// for a handler whose only effect is its writes to tx (it may run more
	// often than it commits).
	Atomic bool
	// JSON holds every body to JSON's canonical form, whatever its
	// Content-Type says: set it when Parse decodes every body as JSON.
	// Without it only a body declared JSON (or declared as nothing) is
	// held to it, and any other is fingerprinted byte for byte, so a body
	// sent as text/plain with duplicate or case-folded member names (which
	// decoders resolve differently) or invalid UTF-8 would reach Parse.
	// With it, such a body is refused with 400 "invalid_json" before the
	// key is claimed, whatever its Content-Type.
	JSON bool
	// ProblemBase is the base of the type URI of the door's problem
	// details: the type of code c is ProblemBase + c. Empty (the default)
	// gives RFC 9457's "about:blank".
	ProblemBase string
	// Logger receives a line for each refused request and each
	// misconfiguration (default: none).
	Logger *slog.Logger
}

// Refusal turns a request away with its own status: a Parse returns it as
// its error, before the key is claimed, so that the client may correct the
// request under the same key; a handler returns it to store nothing (the
// lease is lapsed, and the retry runs the handler again). The door finds
// it with errors.As, so it may be wrapped. The door answers StatusCode
// with problem details whose code is Code and whose detail is Message,
// without Retry-After. A nil *Refusal returned as an error refuses
// nothing. Every door of idemlambda takes this same type.
type Refusal struct {
	StatusCode int    // the answer's status, a 4xx
	Code       string // the problem's code: stable, machine-readable
	Message    string // the problem's detail, for the client
}

func (r *Refusal) Error() string {
	if r == nil {
		return "no refusal" // a typed nil, which refuses nothing
	}
	return r.Code + ": " + r.Message
}

// TransientError is a handler's failure the client should retry under the
// same key: the lease is lapsed and nothing is stored, and the door answers
// StatusCode (503 unless it is a 5xx) with problem details of Code and
// Retry-After. The door finds it with errors.As, so it may be wrapped.
// Every door of idemlambda takes this same type.
type TransientError struct {
	StatusCode int           // the answer's status, a 5xx (503 otherwise)
	RetryAfter time.Duration // sent in whole seconds, rounded up, at least 1
	Code       string        // the problem's code: stable, machine-readable
	Err        error         // the cause, for errors.Is and the logs; not sent
}

func (e *TransientError) Error() string { return fmt.Sprintf("transient (%s): %v", e.Code, e.Err) }
func (e *TransientError) Unwrap() error { return e.Err }

// errorTypes are the readers of Refusal and TransientError that Wrap
// hands door: door, which this package imports, cannot name them.
// (idemlambda, whose names for the types are aliases of these, has its own.)
var errorTypes = door.Errors{Refusal: refusalIn, Transient: transientIn}

func refusalIn(err error) (*door.Refused, bool) {
	var r *Refusal
	switch {
	case !errors.As(err, &r):
		return nil, false
	case r == nil:
		return nil, true // a typed nil: no refusal
	}
	return &door.Refused{Status: r.StatusCode, Code: r.Code, Message: r.Message}, true
}

func transientIn(err error) *door.Transient {
	var t *TransientError
	if !errors.As(err, &t) || t == nil {
		return nil
	}
	return &door.Transient{Status: t.StatusCode, RetryAfter: t.RetryAfter, Code: t.Code}
}

// Problem is the door's own problem details answer for status, code and
// detail (RFC 9457: application/problem+json with type, title, status,
// detail and code), its type base + code as Options.ProblemBase makes the
// door's ("" gives "about:blank"): pass the door's ProblemBase. A handler
// or a ConflictFunc returns it as its response, stored and replayed as any
// other (a 5xx is not stored). A ConflictFunc that returns a *Refusal as
// its error gets the same body, but nothing is stored: each retry runs
// the handler again.
func Problem(base string, status int, code, detail string) idem.Response {
	return door.Problem(base, status, code, detail)
}

// Header names of the IETF draft "The Idempotency-Key HTTP Header Field",
// as every door of pkg/idem reads and writes them.
const (
	HeaderIdempotencyKey = door.HeaderIdempotencyKey
	HeaderReplayed       = door.HeaderReplayed
)

// ParseKey returns the key an Idempotency-Key header value carries: a bare
// token or the IETF draft's quoted Structured Field string, white space
// trimmed; several keys (a repeated header, comma-joined) are refused. The
// string may carry RFC 8941 parameters (`"k";v=1`): they are checked
// against RFC 8941's grammar and ignored, as the draft defines none.
func ParseKey(value string) (string, error) { return door.ParseKey(value) }

// Wrap returns an http.Handler that runs h once per Idempotency-Key, as the
// package documentation says. parse may be nil (Body is then the zero
// value). It panics on Options out of range.
func Wrap[B any](s Doer, parse Parse[B], h Handler[http.Request, B], optFns ...func(*Options[http.Request])) http.Handler {
	o := Options[http.Request]{Scope: func(*http.Request) string { return "" }}
	for _, fn := range optFns {
		fn(&o)
	}
	c := door.NewConfig(door.Config{MaxBody: o.MaxBodyBytes, Atomic: o.Atomic, JSON: o.JSON, ProblemBase: o.ProblemBase, Logger: o.Logger, Errors: errorTypes})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := door.Serve(r.Context(), s, c, door.Call[B]{Scope: o.Scope(r), In: read(r, c.MaxBody), Parse: parse,
			Handle: func(ctx context.Context, a door.Admitted[B], tx *idem.Tx) (idem.Response, error) {
				// The request carries the work's context: its deadline is
				// the lease's, less the commit's reserve.
				return h(ctx, Request[http.Request, B]{Event: r.WithContext(ctx), Body: a.Body, Scope: a.Scope, Key: a.Key}, tx)
			}})
		header := w.Header()
		for k, v := range resp.Header {
			header.Set(k, v)
		}
		for _, cookie := range resp.Cookies {
			header.Add("Set-Cookie", cookie)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(resp.Body) // a failed write is the client gone: there is no one left to tell
	})
}

// read reads a request's body, up to one byte past the limit.
func read(r *http.Request, maxBody int) door.Inbound {
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBody)+1))
	refusal := door.CheckSize(len(body), maxBody)
	if err != nil && refusal == nil {
		refusal = door.Unreadable()
	}
	r.Body = io.NopCloser(bytes.NewReader(body)) // for a handler that reads it raw
	key := r.Header.Values(HeaderIdempotencyKey)
	route, values := r.Pattern, pathValues(r)
	switch {
	case route == "":
		route = r.URL.Path
	case strings.HasSuffix(route, "/"):
		// A subtree pattern ("/orders/", "/") matches every path beneath
		// it, each another resource: the path is part of the request.
		// "/" can be no wildcard's name.
		values["/"] = r.URL.EscapedPath()
	}
	return door.Inbound{
		Key: strings.Join(key, ","), HasKey: len(key) > 0,
		Method: r.Method, Route: door.Route(route, values, r.URL.RawQuery),
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
