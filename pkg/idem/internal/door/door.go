// Package door is what every HTTP front door of pkg/idem shares: the
// checks that write nothing, the call of Do or DoAtomic, and the answers.
// The public doors (idemhttp.Wrap, idemlambda's HTTP doors) read their own
// event into an Inbound, hand it to Serve with their handler, and write the
// Response back in their own form. The types a user sees (Request, Handler,
// Parse, Options) are idemhttp's.
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

// doer is what Serve calls of a Store: idemhttp.Doer.
type doer interface {
	Do(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error)
	DoAtomic(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error)
}

// Header names of the IETF draft "The Idempotency-Key HTTP Header Field".
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotent-Replayed"
)

// Config is what Serve needs of a door's options, checked.
type Config struct {
	MaxBody     int
	Atomic      bool
	ProblemBase string
	Logger      *slog.Logger
}

// NewConfig checks a door's options and fills in their defaults: an option
// out of range panics here, with an error that matches
// idem.ErrInvalidOptions, as the doors return no error of their own.
func NewConfig(maxBody int, atomic bool, problemBase string, logger *slog.Logger) Config {
	if maxBody < 0 {
		panic(fmt.Errorf("%w: MaxBodyBytes %d is negative (0 takes the default, 64 KiB)", idem.ErrInvalidOptions, maxBody))
	}
	if maxBody == 0 {
		maxBody = 64 << 10
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return Config{MaxBody: maxBody, Atomic: atomic, ProblemBase: problemBase, Logger: logger}
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

// Serve is every HTTP door after it has read its event: the checks (the
// scope, then in's own refusal, the key, parse, the fingerprint), then Do
// (or DoAtomic) around h, then the answer, errors as problem details and a
// replay marked Idempotent-Replayed.
func Serve[E, B any](ctx context.Context, s doer, c Config, ev *E, scope string, in Inbound, parse func([]byte) (B, error),
	h func(ctx context.Context, ev *E, body B, scope, key string, tx *idem.Tx) (idem.Response, error)) idem.Response {
	key, body, fp, refusal := admit(&in, scope, parse)
	if refusal != nil {
		c.Logger.Info("idem: refused", "code", refusal.Code, "status", refusal.StatusCode)
		return problem(c.ProblemBase, refusal.StatusCode, refusal.Code, refusal.Message, "")
	}
	do := s.Do
	if c.Atomic {
		do = s.DoAtomic
	}
	res, err := do(ctx, idem.Request{Scope: scope, Key: key, Fingerprint: fp}, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		resp, err := h(ctx, ev, body, scope, key, tx)
		if err != nil {
			return idem.Response{}, err
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
// the body (400, 413), the key (400), parse, the fingerprint.
func admit[B any](in *Inbound, scope string, parse func([]byte) (B, error)) (key string, body B, fp string, refusal *httpapi.Refusal) {
	if httpapi.CheckScope(scope) != nil {
		return "", body, "", httpapi.Unauthenticated()
	}
	if in.Refusal != nil {
		return "", body, "", in.Refusal
	}
	if !in.HasKey {
		return "", body, "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "idempotency_key_missing", Message: "this endpoint needs an Idempotency-Key header"}
	}
	key, err := ParseKey(in.Key)
	if err != nil {
		return "", body, "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "idempotency_key_invalid", Message: err.Error()}
	}
	if parse != nil {
		if body, err = parse(in.Body); err != nil {
			var r *httpapi.Refusal
			switch {
			case errors.As(err, &r) && r == nil:
				// A typed nil *Refusal in the error: no refusal at all.
			case r != nil:
				return "", body, "", r
			default:
				return "", body, "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "invalid_body", Message: err.Error()}
			}
		}
	}
	fp, err = idem.Fingerprint(in.Method, in.Route, in.Body, len(in.Body) > 0 && isJSON(in.ContentType))
	if err != nil {
		return "", body, "", &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "invalid_json", Message: err.Error()}
	}
	return key, body, fp, nil
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
	var transient *httpapi.TransientError
	var unstored interface{ Response() idem.Response }
	var refusal *httpapi.Refusal
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
	case errors.As(err, &refusal) && refusal != nil:
		// The handler's own refusal: its status, nothing stored.
		return problem(base, refusal.StatusCode, refusal.Code, refusal.Message, "")
	case errors.Is(err, idem.ErrInvalidScope):
		// The core's own check of the scope (the door's comes first).
		return problem(base, http.StatusUnauthorized, "unauthenticated", "no verified identity on this request", "")
	case errors.Is(err, idem.ErrInvalidBody):
		// A request the fingerprint cannot take: the same request is
		// refused again, so no Retry-After.
		return problem(base, http.StatusBadRequest, "invalid_body", err.Error(), "")
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
