package idem

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/httpapi"
)

// HTTPHandler is an API Gateway (HTTP API, payload 2.0) handler that adds its
// business writes to tx. The request it gets has passed the adapter's checks:
// its body is decoded from base64 and within the size limit. Scope and Key
// return the caller's scope and key within it. HTTPTyped's handler gets them
// as fields instead, with the body parsed.
type HTTPHandler func(ctx context.Context, req events.APIGatewayV2HTTPRequest, tx *Tx) (events.APIGatewayV2HTTPResponse, error)

// APIGatewayHandler is what lambda.Start takes for an HTTP API.
type APIGatewayHandler func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// HTTPRequest is what an HTTPTyped handler gets.
type HTTPRequest[B any] = Req[events.APIGatewayV2HTTPRequest, B]

// HTTPOptions configure Store.HTTP and HTTPTyped.
type HTTPOptions struct {
	// ScopeClaim is the verified JWT claim that names the caller (default
	// "sub"). It is read from the authorizer's context, which API Gateway
	// fills only after verifying the token: no header chooses the scope.
	ScopeClaim string
	// Scope, when set, chooses the scope from the verified identity on the
	// request instead of ScopeClaim (a Lambda authorizer's context, say). It
	// must never read a value the client sets.
	Scope func(req *events.APIGatewayV2HTTPRequest) string
	// MaxBodyBytes refuses larger bodies with 413 before anything is
	// written (default 64 KiB); a negative value panics when the
	// door is built, with an error that matches ErrInvalidOptions.
	MaxBodyBytes int
	// Validate, when set, checks the request before the key is claimed. A
	// refusal is answered as it is and nothing is written or stored, so the
	// client may correct the request and send it again under the same key.
	// HTTPTyped's parse function does the same and keeps what it parsed.
	Validate func(req *events.APIGatewayV2HTTPRequest) *httpapi.Refusal
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
// StatusCode with Retry-After (503 when StatusCode is not a 5xx).
type TransientError struct {
	StatusCode int
	RetryAfter time.Duration
	Code       string // a stable, machine-readable error code
	Err        error
}

func (e *TransientError) Error() string { return fmt.Sprintf("transient (%s): %v", e.Code, e.Err) }
func (e *TransientError) Unwrap() error { return e.Err }

// HTTP wraps h so that each request runs once per Idempotency-Key: the first
// runs h and stores its response; a retry gets that response again, marked
// "Idempotent-Replayed: true"; a concurrent retry gets 409 with Retry-After;
// the key with a different request gets 422. Every error is problem details
// (application/problem+json) with a stable code.
func (s *Store) HTTP(h HTTPHandler, optFns ...func(*HTTPOptions)) APIGatewayHandler {
	return HTTPTyped(s, nil, func(ctx context.Context, req HTTPRequest[struct{}], tx *Tx) (events.APIGatewayV2HTTPResponse, error) {
		return h(ctx, req.Event, tx)
	}, optFns...)
}

// HTTPTyped is Store.HTTP for a handler that gets its request as fields:
// the body as parse made it (parse runs once, before the claim; nil leaves
// the zero value), the scope and the key.
func HTTPTyped[B any](s *Store, parse Parse[B], h Handler[events.APIGatewayV2HTTPRequest, B, events.APIGatewayV2HTTPResponse], optFns ...func(*HTTPOptions)) APIGatewayHandler {
	o := HTTPOptions{}
	for _, fn := range optFns {
		fn(&o)
	}
	scope := o.Scope
	if scope == nil {
		scope = func(req *events.APIGatewayV2HTTPRequest) string { return httpapi.JWTClaim(req, o.ScopeClaim) }
	}
	d := door[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse]{
		read: readAPIGateway, from: fromHTTP,
		to: func(r Response, _ *events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
			return toAPIGateway(r)
		},
	}
	validate := noValidate[events.APIGatewayV2HTTPRequest]
	if o.Validate != nil {
		validate = o.Validate
	}
	return adapt(s, d, scope, validate, parse, h, newDoorConfig(o.MaxBodyBytes, o.Atomic, o.Logger))
}

func readAPIGateway(req *events.APIGatewayV2HTTPRequest, maxBody int) inbound {
	body, refusal := httpapi.DecodeBody(req.Body, req.IsBase64Encoded, maxBody)
	req.Body, req.IsBase64Encoded = string(body), false
	key, hasKey := httpapi.HeaderValue(req.Headers, HeaderIdempotencyKey)
	ct, _ := httpapi.HeaderValue(req.Headers, "Content-Type")
	route := req.RouteKey
	if route == "" || route == "$default" {
		route = req.RawPath // no route key (the $default route, a hand-made event)
	}
	return inbound{key: key, hasKey: hasKey, method: req.RequestContext.HTTP.Method, route: routeString(route, req.PathParameters, req.RawQueryString), ctype: ct, body: body, refusal: refusal}
}

// fromHTTP keeps what a replay must repeat: the status, the headers that
// describe the result, and the body's bytes.
func fromHTTP(r events.APIGatewayV2HTTPResponse) (Response, error) {
	return fromParts(r.StatusCode, r.Headers, nil, r.Cookies, r.Body, r.IsBase64Encoded)
}

// fromParts is any front door's response as stored: headers that describe
// one transmission dropped, multi-value headers comma-joined (Set-Cookie,
// which cannot be joined, kept in order with the cookies).
func fromParts(status int, header map[string]string, multi map[string][]string, cookies []string, body string, isBase64 bool) (Response, error) {
	b := []byte(body)
	if isBase64 {
		d, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return Response{}, fmt.Errorf("idem: handler returned invalid base64 body: %w", err)
		}
		b = d
	}
	if status == 0 {
		status = http.StatusOK
	}
	out := Response{StatusCode: status, Header: map[string]string{}, Cookies: cookies, Body: b}
	for k, v := range header {
		if keepHeader(k) {
			out.Header[k] = v
		}
	}
	for k, vs := range multi {
		switch {
		case strings.EqualFold(k, "Set-Cookie"):
			out.Cookies = append(out.Cookies, vs...)
		case keepHeader(k) && len(vs) > 0:
			out.Header[k] = strings.Join(vs, ", ")
		}
	}
	return out, nil
}

// encodeBody is a stored body as a Lambda event carries it: a body that is
// not UTF-8 travels as base64, which the front door turns back into bytes.
func encodeBody(b []byte) (body string, isBase64 bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

func copyHeader(h map[string]string) map[string]string {
	out := make(map[string]string, len(h)+1)
	for k, v := range h {
		out[k] = v
	}
	return out
}

// toAPIGateway renders a stored response for payload 2.0.
func toAPIGateway(r Response) events.APIGatewayV2HTTPResponse {
	out := events.APIGatewayV2HTTPResponse{StatusCode: r.StatusCode, Headers: copyHeader(r.Header), Cookies: r.Cookies}
	out.Body, out.IsBase64Encoded = encodeBody(r.Body)
	return out
}
