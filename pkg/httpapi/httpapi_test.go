package httpapi_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/httpapi"
)

// Claims arrive as API Gateway passes them: strings, numbers in their
// shortest decimal form (a JSON number decodes as float64), arrays and
// objects as Go prints them, the rest likewise.
func TestClaimStringsAsAPIGatewayPassesThem(t *testing.T) {
	var claims map[string]any
	raw := `{"sub":"alice","exp":1767225600,"ratio":1.5,"admin":true,` +
		`"cognito:groups":["admin","users"],"address":{"country":"FR","locality":"Lyon"}}`
	if err := json.Unmarshal([]byte(raw), &claims); err != nil {
		t.Fatal(err)
	}
	got := httpapi.ClaimStrings(claims)
	want := map[string]string{
		"sub": "alice", "exp": "1767225600", "ratio": "1.5", "admin": "true",
		"cognito:groups": "[admin users]", "address": "map[country:FR locality:Lyon]",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("ClaimStrings = %v, want %v", got, want)
	}
}

// A claim whose value is JSON null is left out, as API Gateway leaves it
// out: a token whose sub is null names no caller, and its request is 401,
// not scoped to "<nil>".
func TestClaimStringsLeaveNullClaimsOut(t *testing.T) {
	var claims map[string]any
	if err := json.Unmarshal([]byte(`{"sub":null,"email":"a@b.c"}`), &claims); err != nil {
		t.Fatal(err)
	}
	got := httpapi.ClaimStrings(claims)
	if want := map[string]string{"email": "a@b.c"}; !maps.Equal(got, want) {
		t.Fatalf("ClaimStrings = %v, want %v", got, want)
	}
	req := events.APIGatewayV2HTTPRequest{RequestContext: events.APIGatewayV2HTTPRequestContext{
		Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: got},
		},
	}}
	if scope, _, refusal := httpapi.CheckRequest(&req, "sub", 0); refusal == nil || refusal.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a null sub: scope %q, refusal %v, want 401", scope, refusal)
	}
}
