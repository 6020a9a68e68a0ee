// Package door is what every HTTP front door of pkg/idem shares: the
// checks that write nothing, the call of Do or DoAtomic, and the answers.
// The public doors (idemhttp.Wrap, idemlambda's HTTP doors) read their own
// event into an Inbound, hand it to Serve with their handler, and write the
// Response back in their own form. The types a user sees (Request, Handler,
// Parse, Options, Refusal, TransientError) are idemhttp's: door, which
// idemhttp imports, reads the error types through the Errors a door hands
// it, and answers its own checks' refusals as values of its own.
package door

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkeys/idem/pkg/idem"
)

// doer is what Serve calls of a Store: idemhttp.Doer.
type doer interface {
	Do(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error)
	DoAtomic(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error)
}

// Header names of the IETF draft "The Idempotency-Key HTTP Header Field",
// as every door reads and writes them; idemhttp exports them.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotent-Replayed"
)

// Config is what Serve needs of a door's options, checked.
type Config struct {
	MaxBody     int
	Atomic      bool
	JSON        bool // every body is JSON, whatever its Content-Type
	ProblemBase string
	Logger      *slog.Logger
	Errors      Errors
}

// NewConfig checks a door's options and fills in their defaults: an option
// out of range panics here, with an error that matches
// idem.ErrInvalidOptions, as the doors return no error of their own.
func NewConfig(c Config) Config {
	if c.MaxBody < 0 {
		panic(fmt.Errorf("%w: MaxBodyBytes %d is negative (0 takes the default, 64 KiB)", idem.ErrInvalidOptions, c.MaxBody))
	}
	if c.MaxBody == 0 {
		c.MaxBody = 64 << 10
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Errors.Refusal == nil {
		c.Errors.Refusal = func(error) (*Refused, bool) { return nil, false }
	}
	if c.Errors.Transient == nil {
		c.Errors.Transient = func(error) *Transient { return nil }
	}
	return c
}

// Inbound is a request as every door reduces it for Serve.
type Inbound struct {
	Key         string // the Idempotency-Key header's value, comma-joined if repeated
	HasKey      bool
	Method      string
	Route       string // Route of where it went
	ContentType string
	Body        []byte // decoded
	Refusal     *Refused
}

// Admitted is a request that passed the checks: what a door's handler is
// called with.
type Admitted[B any] struct {
	Body       B
	Scope, Key string
}

// Call is one request at a door: its verified scope, what the door read
// of it, the door's Parse (nil: none) and its handler.
type Call[B any] struct {
	Scope  string
	In     Inbound
	Parse  func([]byte) (B, error)
	Handle func(ctx context.Context, req Admitted[B], tx *idem.Tx) (idem.Response, error)
}

// Serve is every HTTP door after it has read its event: the checks (the
// scope, then in's own refusal, the key, parse, the fingerprint), then Do
// (or DoAtomic) around the handler, then the answer, errors as problem
// details and a replay marked Idempotent-Replayed.
func Serve[B any](ctx context.Context, s doer, c Config, call Call[B]) idem.Response {
	body, req, refusal := admit(c, &call)
	if refusal != nil {
		c.logRefusal(refusal, call.Scope)
		refusedEvent(ctx, refusal)
		return problem(c.ProblemBase, refusal.Status, refusal.Code, refusal.Message, "")
	}
	do := s.Do
	if c.Atomic {
		do = s.DoAtomic
	}
	res, err := do(ctx, req, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return c.stored(call.Handle(ctx, Admitted[B]{Body: body, Scope: req.Scope, Key: req.Key}, tx))
	})
	if err != nil {
		if errors.Is(err, idem.ErrMisconfigured) {
			c.Logger.Error("idem: misconfigured", "error", err.Error())
		}
		return c.errorResponse(err)
	}
	if res.Replayed {
		res.Response.Header = CopyHeader(res.Response.Header)
		res.Response.Header[HeaderReplayed] = "true"
	}
	return res.Response
}

// stored is the handler's answer as Do takes it: the response to store,
// or the error that lapses the lease.
func (c Config) stored(resp idem.Response, err error) (idem.Response, error) {
	if err != nil {
		r, found := c.Errors.Refusal(err)
		switch {
		case !found:
			return idem.Response{}, err
		case r != nil:
			// The handler's refusal: its own answer, stored nowhere.
			// The error carries it, so that the store's span knows it
			// for a 4xx, an answer and not a failure.
			return idem.Response{}, &refusedAnswer{err: err, resp: problem(c.ProblemBase, r.Status, r.Code, r.Message, "")}
		}
		// A typed nil *Refused refuses nothing, as from Parse.
	}
	if resp.StatusCode == 0 {
		resp.StatusCode = http.StatusOK
	}
	resp.Header = storedHeader(resp.Header)
	if resp.StatusCode >= 500 {
		// The handler's own final 5xx is a transient failure on
		// every door: not stored, the lease lapsed, sent back as it
		// is but for the headers of one transmission.
		return idem.Response{}, &failedResponse{resp: resp}
	}
	return resp, nil
}

// refusedEvent tells the request's span, if it records (the server's, or
// the Lambda invocation's), that the door refused the request before any
// call: the refusal's code and status, never its message, which may
// quote the body.
func refusedEvent(ctx context.Context, r *Refused) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent("idem.refused", trace.WithAttributes(attribute.String("idem.refusal.code", r.Code), attribute.Int("idem.status_code", r.Status)))
}

// logRefusal logs a refused request: a line for each, and a warning, with
// its cause, for an identity that is there but cannot be a scope (a proxy
// that writes Latin-1 names, say), which turns every request of that
// caller away until someone fixes it.
func (c Config) logRefusal(r *Refused, scope string) {
	if r.Status == http.StatusUnauthorized && scope != "" {
		c.Logger.Warn("idem: refused: the verified identity cannot be a scope", "code", r.Code, "status", r.Status, "cause", r.Message)
		return
	}
	c.Logger.Info("idem: refused", "code", r.Code, "status", r.Status)
}

// admit runs the checks that write nothing, in order: the identity (401),
// the body (400, 413), the key (400), parse, the fingerprint. It returns
// the parsed body and the request for Do.
func admit[B any](c Config, call *Call[B]) (body B, req idem.Request, refusal *Refused) {
	in := &call.In
	if r := checkScope(call.Scope); r != nil {
		return body, req, r
	}
	if in.Refusal != nil {
		return body, req, in.Refusal
	}
	if !in.HasKey {
		return body, req, &Refused{http.StatusBadRequest, "idempotency_key_missing", "this endpoint needs an Idempotency-Key header"}
	}
	key, err := ParseKey(in.Key)
	if err != nil {
		return body, req, &Refused{http.StatusBadRequest, "idempotency_key_invalid", err.Error()}
	}
	if call.Parse != nil {
		if body, err = call.Parse(in.Body); err != nil {
			r, found := c.Errors.Refusal(err)
			switch {
			case found && r == nil:
				// A typed nil *Refused in the error: no refusal at all.
			case found:
				return body, req, r
			default:
				return body, req, &Refused{http.StatusBadRequest, "invalid_body", err.Error()}
			}
		}
	}
	fp, err := idem.Fingerprint(in.Method, in.Route, in.Body, len(in.Body) > 0 && (c.JSON || isJSON(in.ContentType)))
	if err != nil {
		return body, req, &Refused{http.StatusBadRequest, "invalid_json", err.Error()}
	}
	return body, idem.Request{Scope: call.Scope, Key: key, Fingerprint: fp}, nil
}

// Route is what the fingerprint takes of where a request went: the route
// as the door matched it (its pattern and path parameters, not the raw
// path, which a trailing slash, a stage or a custom domain's API mapping
// changes) and the raw query string. Each part is length-prefixed, so no
// two requests give the same string.
func Route(route string, params map[string]string, query string) string {
	var b strings.Builder
	part := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	part(route)
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	slices.Sort(names)
	part(strconv.Itoa(len(names)))
	for _, name := range names {
		part(name)
		part(params[name])
	}
	part(query)
	return b.String()
}

// isJSON says whether to canonicalise the body as JSON without
// Config.JSON: when it is declared JSON, or declared as nothing at all
// (the usual curl case).
func isJSON(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// notReplayed are response headers that describe one transmission, not the
// result, so they are neither stored nor replayed. Cookies are part of the
// result: Set-Cookie is kept.
var notReplayed = map[string]bool{
	"date": true, "content-length": true, "connection": true,
	"transfer-encoding": true, "x-amzn-requestid": true, "x-request-id": true,
	"apigw-requestid": true, strings.ToLower(HeaderReplayed): true,
}

// storedHeader is h without the headers of one transmission.
func storedHeader(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if !notReplayed[strings.ToLower(k)] {
			out[k] = v
		}
	}
	return out
}

// CopyHeader is a copy of h with room for one more.
func CopyHeader(h map[string]string) map[string]string {
	out := make(map[string]string, len(h)+1)
	for k, v := range h {
		out[k] = v
	}
	return out
}
