package idem

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// HTTPHandler is an API Gateway (HTTP API, payload 2.0) handler that adds its
// business writes to tx. The request it gets has passed the adapter's checks:
// its body is decoded from base64 and within the size limit. Scope returns
// the caller's scope within it.
type HTTPHandler func(ctx context.Context, req events.APIGatewayV2HTTPRequest, tx *Tx) (events.APIGatewayV2HTTPResponse, error)

// APIGatewayHandler is what lambda.Start takes for an HTTP API.
type APIGatewayHandler func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// HTTPOptions configure Store.HTTP.
type HTTPOptions struct {
	// ScopeClaim is the verified JWT claim that names the caller (default
	// "sub"). It is read from the authorizer's context, which API Gateway
	// fills only after verifying the token: no header chooses the scope.
	ScopeClaim string
	// MaxBodyBytes refuses larger bodies with 413 before anything is
	// written (default 64 KiB).
	MaxBodyBytes int
	// Validate, when set, checks the request before the key is claimed. A
	// refusal is answered as it is and nothing is written or stored, so the
	// client may correct the request and send it again under the same key.
	Validate func(req *events.APIGatewayV2HTTPRequest) *Refusal
	// Atomic runs the handler with Store.DoAtomic instead of Store.Do: one
	// round trip, for a handler whose only effect is the writes it adds to
	// tx (it may run more often than it commits).
	Atomic bool
	// Logger, when set, receives a line for each refused request.
	Logger *slog.Logger
}

// Header names of the IETF draft "The Idempotency-Key HTTP Header Field".
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotent-Replayed"
)

// notReplayed are response headers that describe one transmission, not the
// result, so a replay does not repeat them. Cookies are part of the result:
// Set-Cookie is kept, and so are the payload's cookies.
var notReplayed = map[string]bool{
	"date": true, "content-length": true, "connection": true,
	"transfer-encoding": true, "x-amzn-requestid": true, "x-request-id": true,
	"apigw-requestid": true, strings.ToLower(HeaderReplayed): true,
}

// TransientError is a failure the client should retry: the handler returns
// it, the lease is lapsed and nothing is stored, and the adapter answers
// StatusCode (a 5xx) with Retry-After.
type TransientError struct {
	StatusCode int
	RetryAfter time.Duration
	Code       string // a stable, machine-readable error code
	Err        error
}

func (e *TransientError) Error() string { return fmt.Sprintf("transient (%s): %v", e.Code, e.Err) }
func (e *TransientError) Unwrap() error { return e.Err }

type (
	scopeKey struct{}
	keyKey   struct{}
)

// Scope returns the scope that Store.HTTP put in the context of a handler.
func Scope(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

// Key returns the idempotency key, parsed and validated, that Store.HTTP
// put in the context of a handler: what to derive a downstream key from.
func Key(ctx context.Context) string {
	k, _ := ctx.Value(keyKey{}).(string)
	return k
}

// HTTP wraps h so that each request runs once per Idempotency-Key: the first
// runs h and stores its response; a retry gets that response again, marked
// "Idempotent-Replayed: true"; a concurrent retry gets 409 with Retry-After;
// the key with a different request gets 422. Error bodies are JSON objects
// {"error":{"code":..., "message":...}} with stable codes.
func (s *Store) HTTP(h HTTPHandler, optFns ...func(*HTTPOptions)) APIGatewayHandler {
	o := HTTPOptions{ScopeClaim: "sub", MaxBodyBytes: 64 << 10}
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		scope, body, refusal := CheckRequest(&req, o.ScopeClaim, o.MaxBodyBytes)
		if refusal != nil {
			o.Logger.Info("idem: refused", "code", refusal.Code, "status", refusal.StatusCode)
			return refusal.Response(), nil
		}
		ctx = context.WithValue(ctx, scopeKey{}, scope)
		req.Body, req.IsBase64Encoded = string(body), false

		header, present := HeaderValue(req.Headers, HeaderIdempotencyKey)
		if !present {
			return ErrorResponse(http.StatusBadRequest, "idempotency_key_missing", "this endpoint needs an Idempotency-Key header"), nil
		}
		key, err := ParseKeyHeader(header)
		if err != nil {
			return ErrorResponse(http.StatusBadRequest, "idempotency_key_invalid", err.Error()), nil
		}
		if o.Validate != nil {
			if r := o.Validate(&req); r != nil {
				o.Logger.Info("idem: refused", "code", r.Code, "status", r.StatusCode)
				return r.Response(), nil
			}
		}
		ctx = context.WithValue(ctx, keyKey{}, key)
		fp, err := Fingerprint(req.RequestContext.HTTP.Method, route(&req), body, len(body) > 0 && isJSON(req.Headers))
		if err != nil {
			return ErrorResponse(http.StatusBadRequest, "invalid_json", err.Error()), nil
		}
		do := s.Do
		if o.Atomic {
			do = s.DoAtomic
		}
		res, err := do(ctx, Request{Scope: scope, Key: key, Fingerprint: fp}, func(ctx context.Context, tx *Tx) (Response, error) {
			resp, err := h(ctx, req, tx)
			if err != nil {
				return Response{}, err
			}
			return fromHTTP(resp)
		})
		if err != nil {
			return errorToHTTP(err), nil
		}
		out := toAPIGateway(res.Response)
		if res.Replayed {
			out.Headers[HeaderReplayed] = "true"
		}
		return out, nil
	}
}

// Refusal is a request turned away before any write.
type Refusal struct {
	StatusCode int
	Code       string
	Message    string
}

// Response renders the refusal as an API Gateway response.
func (r *Refusal) Response() events.APIGatewayV2HTTPResponse {
	return ErrorResponse(r.StatusCode, r.Code, r.Message)
}

// CheckRequest does what every handler behind the adapter needs before any
// write, idempotent or not: it reads the scope from the verified claim
// (401 if there is none), decodes a base64 body, and enforces the body limit
// (413). Handlers that do not go through Store.HTTP (a GET) call it too.
func CheckRequest(req *events.APIGatewayV2HTTPRequest, claim string, maxBody int) (scope string, body []byte, refusal *Refusal) {
	if claim == "" {
		claim = "sub"
	}
	if jwt := req.RequestContext.Authorizer; jwt != nil && jwt.JWT != nil {
		scope = jwt.JWT.Claims[claim]
	}
	if scope == "" {
		return "", nil, &Refusal{http.StatusUnauthorized, "unauthenticated", "no verified identity on this request"}
	}
	if err := validateScope(scope); err != nil {
		return "", nil, &Refusal{http.StatusUnauthorized, "unauthenticated", "the identity claim is not usable as a scope"}
	}
	body = []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return "", nil, &Refusal{http.StatusBadRequest, "invalid_body", "body is marked base64 but does not decode"}
		}
		body = b
	}
	if maxBody > 0 && len(body) > maxBody {
		return "", nil, &Refusal{http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("body is %d bytes, over the limit of %d", len(body), maxBody)}
	}
	return scope, body, nil
}

// route is what the fingerprint takes of where the request went: the route
// as API Gateway matched it (its key and path parameters, not the raw path,
// which a trailing slash, a stage or a custom domain's API mapping changes)
// and the raw query string. Without a route key (the $default route, a
// hand-made event) the raw path stands in for the route. Each part is
// length-prefixed, so no two requests give the same string.
func route(req *events.APIGatewayV2HTTPRequest) string {
	var b strings.Builder
	part := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	if req.RouteKey == "" || req.RouteKey == "$default" {
		part(req.RawPath)
	} else {
		part(req.RouteKey)
	}
	names := make([]string, 0, len(req.PathParameters))
	for name := range req.PathParameters {
		names = append(names, name)
	}
	slices.Sort(names)
	part(strconv.Itoa(len(names)))
	for _, name := range names {
		part(name)
		part(req.PathParameters[name])
	}
	part(req.RawQueryString)
	return b.String()
}

// HeaderValue looks a header up by name, in any case. API Gateway lowercases
// names in payload 2.0, but a test event or another front end may not.
func HeaderValue(headers map[string]string, name string) (string, bool) {
	if v, ok := headers[strings.ToLower(name)]; ok {
		return v, true
	}
	for k, v := range headers {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// isJSON says whether to canonicalise the body as JSON: when it is declared
// JSON, or declared as nothing at all (the usual curl case).
func isJSON(headers map[string]string) bool {
	ct, ok := HeaderValue(headers, "Content-Type")
	if !ok || ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// ErrorResponse is a JSON error with a stable, machine-readable code.
func ErrorResponse(status int, code, message string) events.APIGatewayV2HTTPResponse {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": message}})
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(body),
	}
}

func errorToHTTP(err error) events.APIGatewayV2HTTPResponse {
	var inProgress *InProgressError
	var transient *TransientError
	switch {
	case errors.As(err, &inProgress):
		r := ErrorResponse(http.StatusConflict, "request_in_progress", "a request with this Idempotency-Key is being processed; retry later")
		r.Headers["Retry-After"] = retryAfter(inProgress.RetryAfter)
		return r
	case errors.Is(err, ErrLeaseLost):
		// The operation is being finished by the request that took it over;
		// a retry will replay that result.
		r := ErrorResponse(http.StatusConflict, "request_in_progress", "this request was taken over by a retry; retry to get its result")
		r.Headers["Retry-After"] = "1"
		return r
	case errors.Is(err, ErrFingerprintMismatch):
		return ErrorResponse(http.StatusUnprocessableEntity, "idempotency_key_reused", "this Idempotency-Key was used with a different request")
	case errors.Is(err, ErrInvalidKey):
		return ErrorResponse(http.StatusBadRequest, "idempotency_key_invalid", err.Error())
	case errors.As(err, &transient):
		r := ErrorResponse(transient.StatusCode, transient.Code, "a dependency failed; retry with the same Idempotency-Key")
		r.Headers["Retry-After"] = retryAfter(transient.RetryAfter)
		return r
	case errors.Is(err, ErrResponseTooLarge), errors.Is(err, ErrItemTooLarge),
		errors.Is(err, ErrTooManyWrites), errors.Is(err, ErrTransactionTooLarge):
		return ErrorResponse(http.StatusInternalServerError, "result_too_large", "the result exceeds what can be stored; nothing was done")
	case errors.Is(err, ErrInvalidWrite):
		// A definite refusal of the operation's writes (two actions on one
		// item, say): nothing was done, and the same writes would be
		// refused again, so this is no "retry is safe" 503.
		return ErrorResponse(http.StatusInternalServerError, "invalid_write", "the operation's writes cannot be committed; nothing was done")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		r := ErrorResponse(http.StatusServiceUnavailable, "timeout", "the request ran out of time; retry with the same Idempotency-Key")
		r.Headers["Retry-After"] = "1"
		return r
	}
	r := ErrorResponse(http.StatusServiceUnavailable, "internal_error", "the request failed; retrying with the same Idempotency-Key is safe")
	r.Headers["Retry-After"] = "1"
	return r
}

func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}

// fromHTTP keeps what a replay must repeat: the status, the headers that
// describe the result, and the body's bytes.
func fromHTTP(r events.APIGatewayV2HTTPResponse) (Response, error) {
	body := []byte(r.Body)
	if r.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(r.Body)
		if err != nil {
			return Response{}, fmt.Errorf("idem: handler returned invalid base64 body: %w", err)
		}
		body = b
	}
	status := r.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	header := map[string]string{}
	for k, v := range r.Headers {
		if !notReplayed[strings.ToLower(k)] {
			header[k] = v
		}
	}
	return Response{StatusCode: status, Header: header, Cookies: r.Cookies, Body: body}, nil
}

// toAPIGateway renders a stored response. A body that is not UTF-8 travels
// as base64, which API Gateway turns back into the same bytes.
func toAPIGateway(r Response) events.APIGatewayV2HTTPResponse {
	out := events.APIGatewayV2HTTPResponse{StatusCode: r.StatusCode, Headers: make(map[string]string, len(r.Header)+1), Cookies: r.Cookies}
	for k, v := range r.Header {
		out.Headers[k] = v
	}
	if utf8.Valid(r.Body) {
		out.Body = string(r.Body)
	} else {
		out.Body, out.IsBase64Encoded = base64.StdEncoding.EncodeToString(r.Body), true
	}
	return out
}
