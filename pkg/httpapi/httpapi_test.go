package httpapi_test

import (
	"maps"
	"testing"

	"github.com/idemkeys/idem/pkg/httpapi"
)

// Claims arrive as API Gateway passes them: strings, numbers in their
// shortest decimal form (a JSON number decodes as float64), the rest as Go
// prints them.
func TestClaimStringsAsAPIGatewayPassesThem(t *testing.T) {
	got := httpapi.ClaimStrings(map[string]any{"sub": "alice", "exp": float64(1767225600), "ratio": 1.5, "admin": true})
	want := map[string]string{"sub": "alice", "exp": "1767225600", "ratio": "1.5", "admin": "true"}
	if !maps.Equal(got, want) {
		t.Fatalf("ClaimStrings = %v, want %v", got, want)
	}
}
