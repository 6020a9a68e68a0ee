package idemlambda

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem/internal/door"
)

// RESTAPI wraps h for an API Gateway REST API (payload 1.0, Lambda proxy
// integration). The scope is by default RESTClaim("sub"), a claim that a
// Cognito user pool authorizer verified; RESTAuthorizer reads a Lambda
// authorizer's context instead. The fingerprint takes the method, the
// resource ("/orders/{id}") and its path parameters, the query and the
// body.
func RESTAPI[B any](s Doer, parse Parse[B], h Handler[events.APIGatewayProxyRequest, B], optFns ...func(*Options[events.APIGatewayProxyRequest])) func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	d := newDoor(s, parse, h, RESTClaim("sub"), optFns)
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		in := inbound(eventParts{ev.Headers, ev.MultiValueHeaders, &ev.Body, &ev.IsBase64Encoded}, d.MaxBody)
		query := rawQuery(ev.QueryStringParameters, ev.MultiValueQueryStringParameters)
		in.Method, in.Route = ev.HTTPMethod, door.Route(ev.Resource, ev.PathParameters, query)
		r := d.serve(ctx, &ev, in)
		out := events.APIGatewayProxyResponse{StatusCode: r.StatusCode, Headers: door.CopyHeader(r.Header)}
		if len(r.Cookies) > 0 {
			out.MultiValueHeaders = map[string][]string{"Set-Cookie": r.Cookies}
		}
		out.Body, out.IsBase64Encoded = encodeBody(r.Body)
		return out, nil
	}
}

// RESTClaim chooses the scope from a claim of a REST API's Cognito user
// pool (or JWT) authorizer, which API Gateway sets after verifying the
// token.
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
