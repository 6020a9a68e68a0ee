// Package door is what every HTTP front door of pkg/idem shares: the
// request value and the handler shape, the options, the checks that write
// nothing, the call of Do or DoAtomic, and the answers. The public doors
// (idemhttp for net/http, idemlambda for Lambda's event sources) read their
// own event into an Inbound, hand it to Serve, and write the Response back
// in their own form; they alias the types here.
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
	"time"

	"github.com/idemkeys/idem/pkg/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
)

// Doer is the part of *idem.Store a front door calls.
type Doer interface {
	Do(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error)
	DoAtomic(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error)
}

// Request is what a door hands its handler once the checks that write
// nothing have passed.
type Request[E, B any] struct {
	// Event is the request as it came, its body decoded from base64.
	Event *E
	// Body is the body as the door's Parse made it (the zero value when
	// Parse is nil).
	Body B
	// Scope is the verified caller, Key the idempotency key within it:
	// what to derive a downstream key from (idem.DownstreamKey).
	Scope, Key string
}

// Handler adds its business writes to tx and returns the response to store
// and send. An error lapses the lease and stores nothing; a final 5xx
// response is not stored either: it goes back as it is, and the retry runs
// the handler again.
type Handler[E, B any] func(ctx context.Context, req Request[E, B], tx *idem.Tx) (idem.Response, error)

// Parse turns a request's body into the handler's value before the key is
// claimed, so that a refusal writes nothing and the client may correct the
// request under the same key. It runs once. An error is the answer: an
// *httpapi.Refusal as it says, any other error 400 "invalid_body".
type Parse[B any] func(body []byte) (B, error)

// Options configure a front door. The zero value of each field means its
// default.
type Options[E any] struct {
	// Scope reads the caller from the verified identity on the request,
	// never from a value the client sets (a header, the body). Each door
	// has its default; "" (or over idem.MaxScopeLength) answers 401.
	Scope func(ev *E) string
	// MaxBodyBytes refuses larger bodies with 413 before anything is
	// written (default 64 KiB). A negative value panics when the door is
	// built, with an error that matches idem.ErrInvalidOptions.
	MaxBodyBytes int
	// Atomic runs the handler with DoAtomic instead of Do: one round trip,
	// for a handler whose only effect is its writes to tx (it may run more
	// often than it commits).
	Atomic bool
	// ProblemBase is the base of the type URI of the door's problem
	// details: the type of code c is ProblemBase + c. Empty (the default)
	// gives RFC 9457's "about:blank".
	ProblemBase string
	// Logger receives a line for each refused request and each
	// misconfiguration (default: none).
	Logger *slog.Logger
}

// TransientError is a failure the client should retry: the handler returns
// it, the lease is lapsed and nothing is stored, and the door answers
// StatusCode (503 when it is not a 5xx) with Retry-After.
type TransientError struct {
	StatusCode int
	RetryAfter time.Duration
	Code       string // a stable, machine-readable error code
	Err        error
}

func (e *TransientError) Error() string { return fmt.Sprintf("transient (%s): %v", e.Code, e.Err) }
func (e *TransientError) Unwrap() error { return e.Err }

// Header names of the IETF draft "The Idempotency-Key HTTP Header Field".
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotent-Replayed"
)

// Config is a door's options, checked and defaulted.
type Config[E any] struct {
	Options[E]
}

// NewConfig applies optFns over the door's default scope and checks the
// result: an option out of range panics here, with an error that matches
// idem.ErrInvalidOptions, as the doors return no error of their own.
func NewConfig[E any](scope func(*E) string, optFns []func(*Options[E])) *Config[E] {
	o := Options[E]{Scope: scope}
	for _, fn := range optFns {
		fn(&o)
	}
	if o.MaxBodyBytes < 0 {
		panic(fmt.Errorf("%w: MaxBodyBytes %d is negative (0 takes the default, 64 KiB)", idem.ErrInvalidOptions, o.MaxBodyBytes))
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 64 << 10
	}
	if o.Scope == nil {
		o.Scope = func(*E) string { return "" }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Config[E]{o}
}

// Inbound is a request as every door reduces it for Serve.
type Inbound struct {
	Key         string // the Idempotency-Key header's value, comma-joined if repeated
	HasKey      bool
	Method      string
	Route       string // Route of where it went
	ContentType string
	Body        []byte // decoded
	Refusal     *httpapi.Refusal
}

// Serve is every HTTP door after it has read its event: the checks, then
// Do (or DoAtomic) around h, then the answer, errors as problem details and
// a replay marked Idempotent-Replayed.
func Serve[E, B any](ctx context.Context, s Doer, c *Config[E], ev *E, in Inbound, parse Parse[B], h Handler[E, B]) idem.Response {
	req := Request[E, B]{Event: ev, Scope: c.Scope(ev)}
	fp, refusal := admit(&in, &req, parse)
	if refusal != nil {
		c.Logger.Info("idem: refused", "code", refusal.Code, "status", refusal.StatusCode)
		return problem(c.ProblemBase, refusal.StatusCode, refusal.Code, refusal.Message, "")
	}
	do := s.Do
	if c.Atomic {
		do = s.DoAtomic
	}
	res, err := do(ctx, idem.Request{Scope: req.Scope, Key: req.Key, Fingerprint: fp}, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		resp, err := h(ctx, req, tx)
		if err == nil && resp.StatusCode == 0 {
			resp.StatusCode = http.StatusOK
		}
		if err == nil && resp.StatusCode >= 500 {
			// The handler's own final 5xx is a transient failure on
			// every door: not stored, the lease lapsed, sent back as is.
			return idem.Response{}, &failedResponse{resp: resp}
		}
		if err == nil {
			resp.Header = storedHeader(resp.Header)
		}
		return resp, err
	})
	if err != nil {
		if errors.Is(err, idem.ErrMisconfigured) {
			c.Logger.Error("idem: misconfigured", "error", err.Error())
		}
		return errorResponse(c.ProblemBase, err)
	}
	if res.Replayed {
		res.Response.Header = CopyHeader(res.Response.Header)
		res.Response.Header[HeaderReplayed] = "true"
	}
	return res.Response
}

// admit runs the checks that write nothing, in order: the identity (401),
// the body (400, 413), the key (400), Parse, the fingerprint.
func admit[E, B any](in *Inbound, req *Request[E, B], parse Parse[B]) (fp string, refusal *httpapi.Refusal) {
	if httpapi.CheckScope(req.Scope) != nil {
		return "", httpapi.Unauthenticated()
	}
	if in.Refusal != nil {
		return "", in.Refusal
	}
	if !in.HasKey {
		return "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "idempotency_key_missing", Message: "this endpoint needs an Idempotency-Key header"}
	}
	key, err := ParseKey(in.Key)
	if err != nil {
		return "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "idempotency_key_invalid", Message: err.Error()}
	}
	req.Key = key
	if parse != nil {
		body, err := parse(in.Body)
		if err != nil {
			var r *httpapi.Refusal
			if errors.As(err, &r) {
				return "", r
			}
			return "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "invalid_body", Message: err.Error()}
		}
		req.Body = body
	}
	fp, err = idem.Fingerprint(in.Method, in.Route, in.Body, len(in.Body) > 0 && isJSON(in.ContentType))
	if err != nil {
		return "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "invalid_json", Message: err.Error()}
	}
	return fp, nil
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

// isJSON says whether to canonicalise the body as JSON: when it is declared
// JSON, or declared as nothing at all (the usual curl case).
func isJSON(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// problem is a problem details response with a stable code.
func problem(base string, status int, code, detail, retry string) idem.Response {
	p := httpapi.NewProblem(status, code, detail).WithBase(base)
	h := map[string]string{"Content-Type": httpapi.ContentType}
	if retry != "" {
		h["Retry-After"] = retry
	}
	return idem.Response{StatusCode: p.Status, Header: h, Body: p.JSON()}
}

// errorResponse answers what Do failed with: every error a problem, with
// Retry-After wherever a retry under the same key is the way on.
func errorResponse(base string, err error) idem.Response {
	var inProgress *idem.InProgressError
	var transient *TransientError
	var unstored interface{ Response() idem.Response }
	switch {
	case errors.As(err, &unstored):
		// The handler's final 5xx, or its ConflictFunc's: sent as it is.
		return unstored.Response()
	case errors.As(err, &inProgress):
		return problem(base, http.StatusConflict, "request_in_progress", "a request with this Idempotency-Key is being processed; retry later", retryAfter(inProgress.RetryAfter))
	case errors.Is(err, idem.ErrLeaseLost):
		// The operation is being finished by the request that took it over;
		// a retry will replay that result.
		return problem(base, http.StatusConflict, "request_in_progress", "this request was taken over by a retry; retry to get its result", "1")
	case errors.Is(err, idem.ErrFingerprintMismatch):
		return problem(base, http.StatusUnprocessableEntity, "idempotency_key_reused", "this Idempotency-Key was used with a different request", "")
	case errors.Is(err, idem.ErrInvalidKey):
		return problem(base, http.StatusBadRequest, "idempotency_key_invalid", err.Error(), "")
	case errors.As(err, &transient):
		status := transient.StatusCode
		if status < 500 || status > 599 {
			status = http.StatusServiceUnavailable // a retry's status, whatever was set
		}
		return problem(base, status, transient.Code, "a dependency failed; retry with the same Idempotency-Key", retryAfter(transient.RetryAfter))
	case errors.Is(err, idem.ErrMisconfigured):
		// The table is missing or the role may not use it: no retry gets
		// past that until someone fixes the configuration.
		return problem(base, http.StatusInternalServerError, "misconfigured", "the service's tables refused the call as configured; no result was stored (retry with the same Idempotency-Key once it is fixed; a new key may repeat the operation)", "")
	case errors.Is(err, idem.ErrWriteConditionFailed):
		// The same writes would meet the same condition on a retry.
		return problem(base, http.StatusInternalServerError, "write_condition_failed", "the operation's writes conflict with what is stored; no result was stored", "")
	case errors.Is(err, idem.ErrResponseTooLarge), errors.Is(err, idem.ErrItemTooLarge),
		errors.Is(err, idem.ErrTooManyWrites), errors.Is(err, idem.ErrTransactionTooLarge):
		return problem(base, http.StatusInternalServerError, "result_too_large", "the result exceeds what can be stored; no result was stored", "")
	case errors.Is(err, idem.ErrInvalidWrite):
		// A definite refusal of the operation's writes (two actions on one
		// item, say): nothing was written, and the same writes would be
		// refused again, so this is no "retry is safe" 503.
		return problem(base, http.StatusInternalServerError, "invalid_write", "the operation's writes cannot be committed; no result was stored", "")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return problem(base, http.StatusServiceUnavailable, "timeout", "the request ran out of time; retry with the same Idempotency-Key", "1")
	}
	return problem(base, http.StatusServiceUnavailable, "internal_error", "the request failed; retrying with the same Idempotency-Key is safe", "1")
}

// failedResponse is a handler's own final 5xx: the lease is lapsed and the
// answer goes back as it is.
type failedResponse struct{ resp idem.Response }

func (e *failedResponse) Error() string {
	return "idem: handler answered " + strconv.Itoa(e.resp.StatusCode) + "; not stored"
}

func (e *failedResponse) Response() idem.Response { return e.resp }

func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
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

// ParseKey returns the key carried by an Idempotency-Key header value. It
// accepts both a bare token and the IETF draft's form, a Structured Field
// string (a quoted string in which only \" and \\ are escapes), and trims
// the optional white space around it. A bare value with a comma is refused:
// a repeated header arrives joined with commas, and several keys are
// ambiguous (a key with a comma in it travels quoted). The result has
// passed idem.ValidateKey.
func ParseKey(value string) (string, error) {
	v := strings.Trim(value, " \t")
	if !strings.HasPrefix(v, `"`) && strings.Contains(v, ",") {
		return "", fmt.Errorf("%w: several keys (a repeated header arrives comma-joined); send one, quoted if it holds a comma", idem.ErrInvalidKey)
	}
	if strings.HasPrefix(v, `"`) {
		key, err := parseSFString(v)
		if err != nil {
			return "", err
		}
		v = key
	}
	if err := idem.ValidateKey(v); err != nil {
		return "", err
	}
	return v, nil
}

// parseSFString decodes an RFC 8941 sf-string. Anything after the closing
// quote is refused: a header that carries more than one key is ambiguous.
func parseSFString(v string) (string, error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", fmt.Errorf("%w: bad escape in quoted key", idem.ErrInvalidKey)
			}
			b.WriteByte(v[i])
		case '"':
			if i != len(v)-1 {
				return "", fmt.Errorf("%w: text after the closing quote (several keys?)", idem.ErrInvalidKey)
			}
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: unterminated quoted key", idem.ErrInvalidKey)
}
