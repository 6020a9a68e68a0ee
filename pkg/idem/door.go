package idem

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
)

// Req is the request a front door hands its handler once the checks that
// write nothing have passed: the event as it came (its body decoded from
// base64), the body as the parse function made it, and the caller's scope
// and idempotency key. Nothing needs a second parse or a context look-up.
type Req[E, B any] struct {
	Event E
	Body  B
	Scope string
	Key   string
}

// Parse turns a request's body into the handler's value, or refuses it
// (400, 422, …) before the key is claimed, so that nothing is written and
// the client may correct the request under the same key. It runs once.
type Parse[B any] func(body []byte) (B, *httpapi.Refusal)

// Handler is a front door's handler: it gets the checked request, adds its
// business writes to tx, and returns the front door's own response type.
// An error lapses the lease (see Work); a *TransientError names its status.
// A response with a final 5xx status is not stored either, on every door:
// it goes back as it is, the lease lapsed, and the retry runs h again.
type Handler[E, B, R any] func(ctx context.Context, req Req[E, B], tx *Tx) (R, error)

// DoorOptions configure the Lambda front doors other than the HTTP API
// (FunctionURL, RESTAPI, ALB).
type DoorOptions[E any] struct {
	// Scope chooses the scope from the verified identity on the event. It
	// must never read a value the client sets (a header, the body). Each
	// front door documents its default; "" answers 401.
	Scope func(ev *E) string
	// MaxBodyBytes refuses larger bodies with 413 before anything is
	// written (default 64 KiB); a negative value panics when the
	// door is built, with an error that matches ErrInvalidOptions.
	MaxBodyBytes int
	// Atomic runs the handler with Store.DoAtomic instead of Store.Do.
	Atomic bool
	// Logger, when set, receives a line for each refused request.
	Logger *slog.Logger
}

// inbound is a request as every front door reduces it for the core.
type inbound struct {
	scope   string
	key     string // the Idempotency-Key header's value, comma-joined if repeated
	hasKey  bool
	method  string
	route   string // routeString of where it went
	ctype   string // the Content-Type header
	body    []byte // decoded
	refusal *httpapi.Refusal
}

// doorConfig is what serve needs of any front door's options.
type doorConfig struct {
	maxBody int
	atomic  bool
	logger  *slog.Logger
}

// newDoorConfig is every door's options, checked when the door is built: an
// option out of range panics there, with an error that matches
// ErrInvalidOptions, as the doors return no error of their own.
func newDoorConfig(maxBody int, atomic bool, logger *slog.Logger) doorConfig {
	if maxBody < 0 {
		panic(fmt.Errorf("%w: MaxBodyBytes %d is negative (0 takes the default, 64 KiB)", ErrInvalidOptions, maxBody))
	}
	if maxBody == 0 {
		maxBody = 64 << 10
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return doorConfig{maxBody: maxBody, atomic: atomic, logger: logger}
}

type (
	scopeKey struct{}
	keyKey   struct{}
	txKey    struct{}
)

// Scope returns the caller's scope that a front door put in the context
// of its handler ("" outside one).
func Scope(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

// Key returns the idempotency key, parsed and validated, that a front door
// put in the context of its handler: what to derive a downstream key from.
func Key(ctx context.Context) string {
	k, _ := ctx.Value(keyKey{}).(string)
	return k
}

// TxFrom returns the Tx of the operation running under ctx: how a net/http
// handler behind Store.Middleware, or a function behind Function, adds its
// business writes. It is nil outside one.
func TxFrom(ctx context.Context) *Tx {
	tx, _ := ctx.Value(txKey{}).(*Tx)
	return tx
}

// admit runs the checks that write nothing, in order: the identity (401),
// the body (400, 413), the key (400), the caller's check, the fingerprint.
func (in *inbound) admit(check func(body []byte) *httpapi.Refusal) (key, fp string, refusal *httpapi.Refusal) {
	if validateScope(in.scope) != nil {
		return "", "", httpapi.Unauthenticated()
	}
	if in.refusal != nil {
		return "", "", in.refusal
	}
	if !in.hasKey {
		return "", "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "idempotency_key_missing", Message: "this endpoint needs an Idempotency-Key header"}
	}
	key, err := ParseKeyHeader(in.key)
	if err != nil {
		return "", "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "idempotency_key_invalid", Message: err.Error()}
	}
	if r := check(in.body); r != nil {
		return "", "", r
	}
	fp, err = Fingerprint(in.method, in.route, in.body, len(in.body) > 0 && isJSON(in.ctype))
	if err != nil {
		return "", "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "invalid_json", Message: err.Error()}
	}
	return key, fp, nil
}

// serve is every HTTP front door after it has read its event: the checks,
// then Do (or DoAtomic) around work, then the answer, errors as problem
// details and a replay marked Idempotent-Replayed.
func (s *Store) serve(ctx context.Context, in inbound, o doorConfig, check func([]byte) *httpapi.Refusal, work func(ctx context.Context, key string, tx *Tx) (Response, error)) Response {
	key, fp, refusal := in.admit(check)
	if refusal != nil {
		o.logger.Info("idem: refused", "code", refusal.Code, "status", refusal.StatusCode)
		return problemResponse(refusal.Problem(), "")
	}
	do := s.Do
	if o.atomic {
		do = s.DoAtomic
	}
	ctx = context.WithValue(context.WithValue(ctx, scopeKey{}, in.scope), keyKey{}, key)
	res, err := do(ctx, Request{Scope: in.scope, Key: key, Fingerprint: fp}, func(ctx context.Context, tx *Tx) (Response, error) {
		resp, err := work(context.WithValue(ctx, txKey{}, tx), key, tx)
		if err == nil && resp.StatusCode >= 500 {
			// The handler's own final 5xx is a transient failure on
			// every door: not stored, the lease lapsed, sent back as is.
			return Response{}, &failedResponse{resp: resp}
		}
		return resp, err
	})
	if err != nil {
		if errors.Is(err, ErrMisconfigured) {
			o.logger.Error("idem: misconfigured", "error", err.Error())
		}
		return errorResponse(err)
	}
	if res.Replayed {
		res.Response.Header = copyHeader(res.Response.Header)
		res.Response.Header[HeaderReplayed] = "true"
	}
	return res.Response
}

// routeString is what the fingerprint takes of where a request went: the
// route as the front door matched it (its pattern and path parameters, not
// the raw path, which a trailing slash, a stage or a custom domain's API
// mapping changes) and the raw query string. Each part is length-prefixed,
// so no two requests give the same string.
func routeString(route string, params map[string]string, query string) string {
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

func problemResponse(p httpapi.Problem, retry string) Response {
	h := map[string]string{"Content-Type": httpapi.ContentType}
	if retry != "" {
		h["Retry-After"] = retry
	}
	return Response{StatusCode: p.Status, Header: h, Body: p.JSON()}
}

// errorResponse answers what Do failed with: every error a problem, with
// Retry-After wherever a retry under the same key is the way on.
func errorResponse(err error) Response {
	var inProgress *InProgressError
	var transient *TransientError
	var failed *failedResponse
	switch {
	case errors.As(err, &failed):
		return failed.resp
	case errors.As(err, &inProgress):
		return problemResponse(httpapi.NewProblem(http.StatusConflict, "request_in_progress", "a request with this Idempotency-Key is being processed; retry later"), retryAfter(inProgress.RetryAfter))
	case errors.Is(err, ErrLeaseLost):
		// The operation is being finished by the request that took it over;
		// a retry will replay that result.
		return problemResponse(httpapi.NewProblem(http.StatusConflict, "request_in_progress", "this request was taken over by a retry; retry to get its result"), "1")
	case errors.Is(err, ErrFingerprintMismatch):
		return problemResponse(httpapi.NewProblem(http.StatusUnprocessableEntity, "idempotency_key_reused", "this Idempotency-Key was used with a different request"), "")
	case errors.Is(err, ErrInvalidKey):
		return problemResponse(httpapi.NewProblem(http.StatusBadRequest, "idempotency_key_invalid", err.Error()), "")
	case errors.As(err, &transient):
		status := transient.StatusCode
		if status < 500 || status > 599 {
			status = http.StatusServiceUnavailable // a retry's status, whatever was set
		}
		return problemResponse(httpapi.NewProblem(status, transient.Code, "a dependency failed; retry with the same Idempotency-Key"), retryAfter(transient.RetryAfter))
	case errors.Is(err, ErrMisconfigured):
		// The table is missing or the role may not use it: no retry gets
		// past that until someone fixes the configuration.
		return problemResponse(httpapi.NewProblem(http.StatusInternalServerError, "misconfigured", "the service's tables refused the call as configured; no result was stored (retry with the same Idempotency-Key once it is fixed; a new key may repeat the operation)"), "")
	case errors.Is(err, ErrWriteConditionFailed):
		// The same writes would meet the same condition on a retry.
		return problemResponse(httpapi.NewProblem(http.StatusInternalServerError, "write_condition_failed", "the operation's writes conflict with what is stored; no result was stored"), "")
	case errors.Is(err, ErrResponseTooLarge), errors.Is(err, ErrItemTooLarge),
		errors.Is(err, ErrTooManyWrites), errors.Is(err, ErrTransactionTooLarge):
		return problemResponse(httpapi.NewProblem(http.StatusInternalServerError, "result_too_large", "the result exceeds what can be stored; no result was stored"), "")
	case errors.Is(err, ErrInvalidWrite):
		// A definite refusal of the operation's writes (two actions on one
		// item, say): nothing was written, and the same writes would be
		// refused again, so this is no "retry is safe" 503.
		return problemResponse(httpapi.NewProblem(http.StatusInternalServerError, "invalid_write", "the operation's writes cannot be committed; no result was stored"), "")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return problemResponse(httpapi.NewProblem(http.StatusServiceUnavailable, "timeout", "the request ran out of time; retry with the same Idempotency-Key"), "1")
	}
	return problemResponse(httpapi.NewProblem(http.StatusServiceUnavailable, "internal_error", "the request failed; retrying with the same Idempotency-Key is safe"), "1")
}

// failedResponse is a handler's own answer that is not stored (a net/http
// handler's 5xx): the lease is lapsed and the answer goes back as it is.
type failedResponse struct{ resp Response }

func (e *failedResponse) Error() string {
	return "idem: handler answered " + strconv.Itoa(e.resp.StatusCode) + "; not stored"
}

func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}

// keepHeader says whether a response header describes the result (and is
// stored and replayed) rather than one transmission.
func keepHeader(name string) bool { return !notReplayed[strings.ToLower(name)] }

// door is what a Lambda front door adds to the core: how to read its event
// (decoding the event's body in place), and how to turn its handler's
// response into a stored one and a stored one into its response.
type door[E, R any] struct {
	read func(ev *E, maxBody int) inbound
	from func(R) (Response, error)
	to   func(r Response, ev *E) R
}

// adapt makes a Lambda handler of a front door: every door is this one
// function over the same core.
func adapt[E, B, R any](s *Store, d door[E, R], scope func(*E) string, validate func(*E) *httpapi.Refusal, parse Parse[B], h Handler[E, B, R], o doorConfig) func(context.Context, E) (R, error) {
	return func(ctx context.Context, ev E) (R, error) {
		in := d.read(&ev, o.maxBody)
		in.scope = scope(&ev)
		var body B
		check := func(b []byte) *httpapi.Refusal {
			if r := validate(&ev); r != nil || parse == nil {
				return r
			}
			v, r := parse(b)
			body = v
			return r
		}
		resp := s.serve(ctx, in, o, check, func(ctx context.Context, key string, tx *Tx) (Response, error) {
			out, err := h(ctx, Req[E, B]{Event: ev, Body: body, Scope: in.scope, Key: key}, tx)
			if err != nil {
				return Response{}, err
			}
			return d.from(out)
		})
		return d.to(resp, &ev), nil
	}
}

func noValidate[E any](*E) *httpapi.Refusal { return nil }
