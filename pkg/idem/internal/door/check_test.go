package door

import (
	"net/http"
	"strings"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
)

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
		r := checkScope(c.scope)
		switch {
		case c.detail == "" && r != nil:
			t.Errorf("%.20q: %v, want a scope", c.scope, r)
		case c.detail != "" && (r == nil || r.Status != http.StatusUnauthorized || r.Code != "unauthenticated" || !strings.Contains(r.Message, c.detail)):
			t.Errorf("%.20q: %v, want 401 unauthenticated saying %q", c.scope, r, c.detail)
		}
	}
}
