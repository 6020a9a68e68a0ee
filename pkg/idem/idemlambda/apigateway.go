package idemlambda

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem/internal/door"
)

// HTTPAPI wraps h for an API Gateway HTTP API (payload 2.0). The scope is
// by default JWTClaim("sub"), the subject the API's JWT authorizer
// verified. The fingerprint takes the method, the route key
// ("POST /orders/{id}") and its path parameters, the raw query and the
// body (the raw path under the $default route).
func HTTPAPI[B any](s Doer, parse Parse[B], h Handler[events.APIGatewayV2HTTPRequest, B], optFns ...func(*Options[events.APIGatewayV2HTTPRequest])) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	d := newDoor(s, parse, h, JWTClaim("sub"), optFns)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		in := inbound(eventParts{ev.Headers, nil, &ev.Body, &ev.IsBase64Encoded}, d.MaxBody)
		route := ev.RouteKey
		if route == "" || route == "$default" {
			route = ev.RawPath // no route key (the $default route, a hand-made event)
		}
		in.Method, in.Route = ev.RequestContext.HTTP.Method, door.Route(route, ev.PathParameters, ev.RawQueryString)
		r := d.serve(ctx, &ev, in)
		out := events.APIGatewayV2HTTPResponse{StatusCode: r.StatusCode, Headers: door.CopyHeader(r.Header), Cookies: r.Cookies}
		out.Body, out.IsBase64Encoded = encodeBody(r.Body)
		return out, nil
	}
}

// JWTClaim chooses the scope from a claim that the HTTP API's JWT
// authorizer verified ("" without one). No header can set it.
func JWTClaim(name string) func(*events.APIGatewayV2HTTPRequest) string {
	if name == "" {
		name = "sub"
	}
	return func(ev *events.APIGatewayV2HTTPRequest) string {
		if a := ev.RequestContext.Authorizer; a != nil && a.JWT != nil {
			return a.JWT.Claims[name]
		}
		return ""
	}
}
