package apitest

import (
	"context"
	"slices"
	"strings"
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
			if req.RequestContext.Authorizer == nil {
				return events.APIGatewayV2HTTPResponse{StatusCode: 401, Headers: map[string]string{"Content-Type": "application/problem+json"},
					Body: `{"type":"https://github.com/idemkeys/idem/blob/main/docs/http-api.md#unauthenticated","title":"Not authenticated","status":401,"detail":"no verified identity","code":"unauthenticated"}`}, nil
			}
			return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"},
				Body: `{"id":"ord_1","object":"order","items":[{"sku":"tea","quantity":1}],"status":"created","created":1}`}, nil
		},
	}}
	c.Send("POST", "/orders", "user-1", "k-1", `{"items":[{"sku":"tea","quantity":1}]}`)
	h := got.Headers
	if h["host"] != Host || h["x-forwarded-proto"] != "https" || h["x-forwarded-port"] != "443" || h["x-forwarded-for"] == "" || h["x-amzn-trace-id"] == "" || h["idempotency-key"] != "k-1" || !strings.HasPrefix(h["authorization"], "Bearer ") {
		t.Errorf("headers %v", h)
	}
	if got.RequestContext.DomainName != Host || got.Body != `{"items":[{"sku":"tea","quantity":1}]}` || got.IsBase64Encoded {
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
	c.Send("POST", "/orders", "", "", `{"items":[{"sku":"tea","quantity":1}]}`)
	if got.RequestContext.Authorizer != nil {
		t.Errorf("sub \"\": authorizer context %+v", got.RequestContext.Authorizer)
	}
}

// RoleProblems names each action a function's tests called that its role
// does not grant, and, once every test ran, each it grants that no test
// called: here the charge's role beside calls that add a DeleteItem on the
// charges and lack the marker's put.
func TestRoleProblemsNameWhatTheRoleAndTheCallsDisagreeOn(t *testing.T) {
	needed := map[string][]string{
		"IdempotencyTable": {"dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		"ChargesTable":     {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		"AttemptsTable":    {"dynamodb:GetItem"},
	}
	called := "the tests of ChargeFunction call dynamodb:DeleteItem on ChargesTable, which its role does not grant"
	unused := "ChargeFunction's role grants dynamodb:PutItem on AttemptsTable, which none of its tests calls"
	for _, tc := range []struct {
		every bool
		want  []string
	}{{true, []string{unused, called}}, {false, []string{called}}} {
		got, err := RoleProblems("ChargeFunction", needed, tc.every)
		slices.Sort(got)
		slices.Sort(tc.want)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("every test ran %v: %q, %v; want %q", tc.every, got, err, tc.want)
		}
	}
}
