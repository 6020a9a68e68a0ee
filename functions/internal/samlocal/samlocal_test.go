package samlocal

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"

	"github.com/idemkeys/idem/functions/internal/httpx"
	"github.com/idemkeys/idem/internal/httpapi"
)

// whoami answers 200 with the scope the idem adapter would take, or its 401.
var whoami = httpx.Routes{"GET /me": func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	scope, _, refusal := httpapi.CheckRequest(&req, "sub", 0)
	if refusal != nil {
		return httpx.Refused(refusal), nil
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: scope}, nil
}}

// token is a JWT signed with a key nobody checks: under the SAM CLI only its
// payload is read.
func token(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte("not the issuer's key"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// samEvent is a request as sam local start-api builds it: payload 2.0,
// header names as the client sent them (Flask's), the SAM CLI's placeholder
// account and API ids, no authorizer context.
func samEvent(headers map[string]string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "GET /me", RawPath: "/me", Headers: headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{AccountID: SAMAccountID, APIID: SAMAPIID, Stage: "$default", DomainName: "localhost"}}
}

func verified(sub string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": sub}},
	}
}

func TestUnverifiedClaimsUnderTheSAMCLI(t *testing.T) {
	tok := token(t, jwt.MapClaims{"sub": "user-sam-1", "exp": 1})
	withVerified := samEvent(map[string]string{"Authorization": "Bearer " + token(t, jwt.MapClaims{"sub": "someone-else"})})
	withVerified.RequestContext.Authorizer = verified("user-verified")
	cases := []struct {
		name   string
		req    events.APIGatewayV2HTTPRequest
		status int
		scope  string
	}{
		{"a bearer token, as sam local start-api passes it", samEvent(map[string]string{"Authorization": "Bearer " + tok}), 200, "user-sam-1"},
		{"header names lowercased, as API Gateway sends them", samEvent(map[string]string{"authorization": "bearer " + tok}), 200, "user-sam-1"},
		{"verified claims are never replaced by the token's", withVerified, 200, "user-verified"},
		{"no token", samEvent(map[string]string{"Content-Type": "application/json"}), 401, ""},
		{"not a JWT", samEvent(map[string]string{"Authorization": "Bearer not-a-jwt"}), 401, ""},
		{"another scheme", samEvent(map[string]string{"Authorization": "Basic " + tok}), 401, ""},
		{"a token without the claim", samEvent(map[string]string{"Authorization": "Bearer " + token(t, jwt.MapClaims{"email": "a@b.c"})}), 401, ""},
		{"a token whose claim is null", samEvent(map[string]string{"Authorization": "Bearer " + token(t, jwt.MapClaims{"sub": nil})}), 401, ""},
	}
	t.Setenv(EnvVar, "true")
	h := Serve(whoami, "sub", slog.New(slog.DiscardHandler))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := h(context.Background(), c.req)
			if err != nil || resp.StatusCode != c.status || (c.status == 200 && resp.Body != c.scope) {
				t.Fatalf("got %d %q (%v), want %d %q", resp.StatusCode, resp.Body, err, c.status, c.scope)
			}
		})
	}
}

func TestWithoutTheSAMCLINoVerifiedIdentityIs401(t *testing.T) {
	req := samEvent(map[string]string{"Authorization": "Bearer " + token(t, jwt.MapClaims{"sub": "user-sam-1"})})
	for _, v := range []string{"", "false", "1", "TRUE"} {
		t.Setenv(EnvVar, v)
		resp, err := Serve(whoami, "sub", slog.New(slog.DiscardHandler))(context.Background(), req)
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s=%q: got %d %q, want 401", EnvVar, v, resp.StatusCode, resp.Body)
		}
	}
}

func TestUnverifiedClaimsWarnOncePerProcessWithoutTheToken(t *testing.T) {
	var logs bytes.Buffer
	tok := token(t, jwt.MapClaims{"sub": "user-sam-1"})
	h := UnverifiedClaims(whoami.Handle, "sub", slog.New(slog.NewJSONHandler(&logs, nil)))
	for range 3 {
		if resp, _ := h(context.Background(), samEvent(map[string]string{"Authorization": "Bearer " + tok})); resp.StatusCode != 200 {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"level":"WARN"`) || !strings.Contains(lines[0], "UNVERIFIED") || !strings.Contains(lines[0], `"claim":"sub"`) {
		t.Fatalf("logs %q: want one WARN line naming the claim", logs.String())
	}
	if strings.Contains(logs.String(), tok) || strings.Contains(logs.String(), "user-sam-1") {
		t.Fatalf("the warning carries the token or a claim's value: %s", logs.String())
	}
}

// AWS_SAM_LOCAL alone never makes a function trust a token: an event as API
// Gateway sends it (a real account and API id), or one with only one of
// the SAM CLI's placeholders, that reaches a function with the variable set
// and no verified claims (a deployed function given the variable by hand,
// a route or a caller that skips the authorizer) gets 401.
func TestAWSSAMLocalAloneTrustsNoToken(t *testing.T) {
	tok := token(t, jwt.MapClaims{"sub": "forged-tenant"})
	headers := map[string]string{"authorization": "Bearer " + tok, "content-type": "application/json"}
	apiGateway := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "GET /me", RawPath: "/me", Headers: headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{AccountID: "111122223333", APIID: "a1b2c3d4e5", Stage: "$default",
			DomainName: "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com", DomainPrefix: "a1b2c3d4e5", RequestID: "JKJaXmPLvHcESHA=",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/me", Protocol: "HTTP/1.1", SourceIP: "203.0.113.7"}}}
	onlyAccount, onlyAPI := apiGateway, apiGateway
	onlyAccount.RequestContext.AccountID = SAMAccountID
	onlyAPI.RequestContext.APIID = SAMAPIID
	t.Setenv(EnvVar, "true")
	h := Serve(whoami, "sub", slog.New(slog.DiscardHandler))
	for name, req := range map[string]events.APIGatewayV2HTTPRequest{"API Gateway's event": apiGateway, "only the account placeholder": onlyAccount, "only the API placeholder": onlyAPI} {
		resp, err := h(context.Background(), req)
		if err != nil || resp.StatusCode != 401 {
			t.Errorf("%s with %s=true: %d %q (%v), want 401", name, EnvVar, resp.StatusCode, resp.Body, err)
		}
	}
}
