package httpapi_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/internal/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
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

// An identity that cannot be a scope is 401 with the cause as its detail:
// none, one over idem.MaxScopeLength, one that is not valid UTF-8 (which
// DynamoDB's SDK would write with U+FFFD for each invalid byte, one record
// for "m\xfcller" and "m\xf6ller"). One of exactly the limit, or in UTF-8,
// is a scope.
func TestCheckScopeRefusesWhatCannotBeAScope(t *testing.T) {
	cases := []struct {
		scope  string
		detail string // "" for a scope
	}{
		{"", "no verified identity"},
		{strings.Repeat("s", idem.MaxScopeLength+1), "over the 1024"},
		{"m\xfcller", "not valid UTF-8"},
		{"m\xf6ller", "not valid UTF-8"},
		{strings.Repeat("s", idem.MaxScopeLength), ""},
		{"müller", ""},
	}
	for _, c := range cases {
		r := httpapi.CheckScope(c.scope)
		switch {
		case c.detail == "" && r != nil:
			t.Errorf("%.20q: %v, want a scope", c.scope, r)
		case c.detail != "" && (r == nil || r.StatusCode != http.StatusUnauthorized || r.Code != "unauthenticated" || !strings.Contains(r.Message, c.detail)):
			t.Errorf("%.20q: %v, want 401 unauthenticated saying %q", c.scope, r, c.detail)
		}
	}
}
