package apitest

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/functions/internal/httpx"
	"github.com/idemkeys/idem/local/template"
)

// The functions' tests get the event a deployed HTTP API sends: the headers
// API Gateway adds, and the claims of a verified token with its iss, aud,
// iat and exp.
func TestCallSendsWhatAPIGatewaySends(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	c := &Caller{T: t, Routes: []template.Route{{Method: "POST", Path: "/orders"}}, Handle: httpx.Routes{
		"POST /orders": func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = req
			return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
		},
	}}
	c.Call("POST", "/orders", "user-1", "k-1", `{"a":1}`)
	h := got.Headers
	if h["host"] != Host || h["x-forwarded-proto"] != "https" || h["x-forwarded-port"] != "443" || h["x-forwarded-for"] == "" || h["x-amzn-trace-id"] == "" || h["idempotency-key"] != "k-1" {
		t.Errorf("headers %v", h)
	}
	if got.RequestContext.DomainName != Host || got.Body != `{"a":1}` || got.IsBase64Encoded {
		t.Errorf("domainName %q, body %q (base64 %v)", got.RequestContext.DomainName, got.Body, got.IsBase64Encoded)
	}
	claims := got.RequestContext.Authorizer.JWT.Claims
	for _, k := range []string{"iss", "aud", "iat", "exp"} {
		if claims[k] == "" {
			t.Errorf("claim %s missing: %v", k, claims)
		}
	}
	if claims["sub"] != "user-1" {
		t.Errorf("claims %v", claims)
	}
	c.Call("POST", "/orders", "", "", `{}`)
	if got.RequestContext.Authorizer != nil {
		t.Errorf("sub \"\": authorizer context %+v", got.RequestContext.Authorizer)
	}
}
