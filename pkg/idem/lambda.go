package idem

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/httpapi"
)

// The Lambda front doors besides the HTTP API. Each reads its event into
// the same checks and the same Do, and writes the same answers in its own
// response type: the first response stored, a replay marked
// Idempotent-Replayed, 409 with Retry-After, 422, errors as problem details.

func doorOptions[E any](optFns []func(*DoorOptions[E]), scope func(*E) string) (func(*E) string, doorConfig) {
	o := DoorOptions[E]{Scope: scope}
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Scope == nil {
		o.Scope = func(*E) string { return "" }
	}
	return o.Scope, newDoorConfig(o.MaxBodyBytes, o.Atomic, o.Logger)
}

// FunctionURL wraps h for a Lambda function URL. The scope is by default
// the caller's IAM principal (its ARN), which Lambda puts in the request
// context after verifying the SigV4 signature of an AWS_IAM URL; a URL with
// auth type NONE has no verified identity, so its requests are 401 unless
// DoorOptions.Scope chooses one (from a token the function itself verified).
// The fingerprint takes the method, the raw path and the raw query.
func FunctionURL[B any](s *Store, parse Parse[B], h Handler[events.LambdaFunctionURLRequest, B, events.LambdaFunctionURLResponse], optFns ...func(*DoorOptions[events.LambdaFunctionURLRequest])) func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	scope, o := doorOptions(optFns, FunctionURLIAMPrincipal)
	d := door[events.LambdaFunctionURLRequest, events.LambdaFunctionURLResponse]{
		read: func(ev *events.LambdaFunctionURLRequest, maxBody int) inbound {
			body, refusal := httpapi.DecodeBody(ev.Body, ev.IsBase64Encoded, maxBody)
			ev.Body, ev.IsBase64Encoded = string(body), false
			in := headerInbound(ev.Headers, nil, body, refusal)
			in.method, in.route = ev.RequestContext.HTTP.Method, routeString(ev.RawPath, nil, ev.RawQueryString)
			return in
		},
		from: func(r events.LambdaFunctionURLResponse) (Response, error) {
			return fromParts(r.StatusCode, r.Headers, nil, r.Cookies, r.Body, r.IsBase64Encoded)
		},
		to: func(r Response, _ *events.LambdaFunctionURLRequest) events.LambdaFunctionURLResponse {
			out := events.LambdaFunctionURLResponse{StatusCode: r.StatusCode, Headers: copyHeader(r.Header), Cookies: r.Cookies}
			out.Body, out.IsBase64Encoded = encodeBody(r.Body)
			return out
		},
	}
	return adapt(s, d, scope, noValidate, parse, h, o)
}

// FunctionURLIAMPrincipal is FunctionURL's default scope: the IAM
// principal that signed the request ("" without AWS_IAM auth). For an
// assumed role it is the role, account and role name
// ("arn:aws:sts::123456789012:assumed-role/batch"), not the session, whose
// name the caller chooses anew each time it assumes the role: a key kept
// across sessions stays in one scope. An IAM Identity Center role
// (AWSReservedSSO_…) keeps its session, whose name is the person signed in.
// Any other principal (an IAM user) is its ARN. The session's full ARN is
// still in the event, for the handler.
func FunctionURLIAMPrincipal(ev *events.LambdaFunctionURLRequest) string {
	a := ev.RequestContext.Authorizer
	if a == nil || a.IAM == nil {
		return ""
	}
	arn := a.IAM.UserARN
	// arn:PARTITION:sts::ACCOUNT:assumed-role/ROLE/SESSION
	f := strings.SplitN(arn, ":", 6)
	if len(f) != 6 || f[0] != "arn" || f[2] != "sts" {
		return arn
	}
	rest, ok := strings.CutPrefix(f[5], "assumed-role/")
	role, session, cut := strings.Cut(rest, "/")
	if !ok || !cut || role == "" || session == "" || strings.HasPrefix(role, "AWSReservedSSO_") {
		return arn
	}
	return strings.Join(f[:5], ":") + ":assumed-role/" + role
}

// RESTAPI wraps h for an API Gateway REST API (payload 1.0, Lambda proxy
// integration). The scope is by default RESTClaim("sub"), a claim that a
// Cognito user pool authorizer verified; RESTAuthorizer chooses a value of
// a Lambda authorizer's context instead. The fingerprint takes the method,
// the resource ("/orders/{id}") and its path parameters, and the query.
func RESTAPI[B any](s *Store, parse Parse[B], h Handler[events.APIGatewayProxyRequest, B, events.APIGatewayProxyResponse], optFns ...func(*DoorOptions[events.APIGatewayProxyRequest])) func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	scope, o := doorOptions(optFns, RESTClaim("sub"))
	d := door[events.APIGatewayProxyRequest, events.APIGatewayProxyResponse]{
		read: func(ev *events.APIGatewayProxyRequest, maxBody int) inbound {
			body, refusal := httpapi.DecodeBody(ev.Body, ev.IsBase64Encoded, maxBody)
			ev.Body, ev.IsBase64Encoded = string(body), false
			in := headerInbound(ev.Headers, ev.MultiValueHeaders, body, refusal)
			query := rawQuery(ev.QueryStringParameters, ev.MultiValueQueryStringParameters)
			in.method, in.route = ev.HTTPMethod, routeString(ev.Resource, ev.PathParameters, query)
			return in
		},
		from: func(r events.APIGatewayProxyResponse) (Response, error) {
			return fromParts(r.StatusCode, r.Headers, r.MultiValueHeaders, nil, r.Body, r.IsBase64Encoded)
		},
		to: func(r Response, _ *events.APIGatewayProxyRequest) events.APIGatewayProxyResponse {
			out := events.APIGatewayProxyResponse{StatusCode: r.StatusCode, Headers: copyHeader(r.Header)}
			if len(r.Cookies) > 0 {
				out.MultiValueHeaders = map[string][]string{"Set-Cookie": r.Cookies}
			}
			out.Body, out.IsBase64Encoded = encodeBody(r.Body)
			return out
		},
	}
	return adapt(s, d, scope, noValidate, parse, h, o)
}

// RESTClaim chooses the scope from a claim of a REST API's Cognito user
// pool (or JWT) authorizer, which API Gateway sets after verifying the token.
func RESTClaim(name string) func(*events.APIGatewayProxyRequest) string {
	return func(ev *events.APIGatewayProxyRequest) string {
		claims, _ := ev.RequestContext.Authorizer["claims"].(map[string]any)
		v, _ := claims[name].(string)
		return v
	}
}

// RESTAuthorizer chooses the scope from a value a Lambda authorizer put in
// its context ("principalId" is the principal it returned).
func RESTAuthorizer(name string) func(*events.APIGatewayProxyRequest) string {
	return func(ev *events.APIGatewayProxyRequest) string {
		v, _ := ev.RequestContext.Authorizer[name].(string)
		return v
	}
}

// ALB wraps h for an Application Load Balancer target, with multi-value
// headers on or off: the answer uses the form the request came in. An ALB
// verifies no identity of its own for a Lambda target, so DoorOptions.Scope
// is required (every request is 401 without it): with an authenticate-oidc
// or authenticate-cognito rule, ALBOIDCIdentity. The fingerprint takes the
// method, the path and the query.
func ALB[B any](s *Store, parse Parse[B], h Handler[events.ALBTargetGroupRequest, B, events.ALBTargetGroupResponse], optFns ...func(*DoorOptions[events.ALBTargetGroupRequest])) func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	scope, o := doorOptions(optFns, nil)
	d := door[events.ALBTargetGroupRequest, events.ALBTargetGroupResponse]{
		read: func(ev *events.ALBTargetGroupRequest, maxBody int) inbound {
			body, refusal := httpapi.DecodeBody(ev.Body, ev.IsBase64Encoded, maxBody)
			ev.Body, ev.IsBase64Encoded = string(body), false
			in := headerInbound(ev.Headers, ev.MultiValueHeaders, body, refusal)
			query := rawQuery(ev.QueryStringParameters, ev.MultiValueQueryStringParameters)
			in.method, in.route = ev.HTTPMethod, routeString(ev.Path, nil, query)
			return in
		},
		from: func(r events.ALBTargetGroupResponse) (Response, error) {
			return fromParts(r.StatusCode, r.Headers, r.MultiValueHeaders, nil, r.Body, r.IsBase64Encoded)
		},
		to: toALB,
	}
	return adapt(s, d, scope, noValidate, parse, h, o)
}

// ALBOIDCIdentity is the subject an ALB authenticate rule verified, in the
// x-amzn-oidc-identity header. Choose it only for a listener rule that
// authenticates: the ALB then overwrites the header whatever the client sent.
func ALBOIDCIdentity(ev *events.ALBTargetGroupRequest) string {
	v, _ := headerValues(ev.Headers, ev.MultiValueHeaders, "x-amzn-oidc-identity")
	return v
}

func toALB(r Response, ev *events.ALBTargetGroupRequest) events.ALBTargetGroupResponse {
	out := events.ALBTargetGroupResponse{StatusCode: r.StatusCode, StatusDescription: strconv.Itoa(r.StatusCode) + " " + http.StatusText(r.StatusCode)}
	out.Body, out.IsBase64Encoded = encodeBody(r.Body)
	if ev.MultiValueHeaders == nil { // multi-value headers off: one value each, one cookie
		out.Headers = copyHeader(r.Header)
		if len(r.Cookies) > 0 {
			out.Headers["Set-Cookie"] = r.Cookies[len(r.Cookies)-1]
		}
		return out
	}
	out.MultiValueHeaders = make(map[string][]string, len(r.Header)+1)
	for k, v := range r.Header {
		out.MultiValueHeaders[k] = []string{v}
	}
	if len(r.Cookies) > 0 {
		out.MultiValueHeaders["Set-Cookie"] = r.Cookies
	}
	return out
}

// headerInbound reads what the checks need of a request's headers.
func headerInbound(single map[string]string, multi map[string][]string, body []byte, refusal *httpapi.Refusal) inbound {
	key, hasKey := headerValues(single, multi, HeaderIdempotencyKey)
	ct, _ := headerValues(single, multi, "Content-Type")
	return inbound{key: key, hasKey: hasKey, ctype: ct, body: body, refusal: refusal}
}

// headerValues looks a header up in both forms an event may carry; the
// values of a repeated header are comma-joined, as HTTP joins them.
func headerValues(single map[string]string, multi map[string][]string, name string) (string, bool) {
	for k, vs := range multi {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return strings.Join(vs, ","), true
		}
	}
	return httpapi.HeaderValue(single, name)
}

// rawQuery is a query string from an event's parameters, in a stable order.
func rawQuery(single map[string]string, multi map[string][]string) string {
	v := url.Values{}
	for k, s := range single {
		v.Set(k, s)
	}
	for k, vs := range multi {
		v[k] = vs
	}
	return v.Encode()
}
