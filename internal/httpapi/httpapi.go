// Package httpapi holds what the example API's handlers behind API
// Gateway's HTTP API need beside pkg/idem's doors, and what the local
// stack needs to stand in for API Gateway: the caller's verified scope
// for a route that is not idempotent (a GET), the body decoded and held to
// a limit, header look-ups in any case, JWT claims as API Gateway hands
// them on, and problem details with members of the example's own. A
// refusal is the doors' public type (idemlambda.Refusal), so that a parse
// step's refusal means one thing behind a door and outside one.
package httpapi

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// Unauthenticated is the 401 of a request without a usable verified identity.
func Unauthenticated() *idemlambda.Refusal {
	return &idemlambda.Refusal{StatusCode: http.StatusUnauthorized, Code: "unauthenticated", Message: "no verified identity on this request"}
}

// CheckScope refuses an identity that cannot be a scope (401), as the
// doors refuse it: none, one over idem.MaxScopeLength, or one that is not
// valid UTF-8. DynamoDB's SDK writes each invalid byte of a string as
// U+FFFD, so two such names of one length ("m\xfcller" and "m\xf6ller",
// Latin-1 from a proxy's header) would share every item keyed by scope.
func CheckScope(scope string) *idemlambda.Refusal {
	switch {
	case scope == "":
		return Unauthenticated()
	case len(scope) > idem.MaxScopeLength:
		return &idemlambda.Refusal{StatusCode: http.StatusUnauthorized, Code: "unauthenticated", Message: fmt.Sprintf("the verified identity is %d bytes, over the %d a scope may have", len(scope), idem.MaxScopeLength)}
	case !utf8.ValidString(scope):
		return &idemlambda.Refusal{StatusCode: http.StatusUnauthorized, Code: "unauthenticated", Message: "the verified identity is not valid UTF-8, so it cannot be a scope"}
	}
	return nil
}

// DecodeBody decodes a body that may be base64 (400 if it does not decode)
// and holds it to maxBody bytes when maxBody is positive (413).
func DecodeBody(body string, isBase64 bool, maxBody int) ([]byte, *idemlambda.Refusal) {
	b := []byte(body)
	if isBase64 {
		d, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, &idemlambda.Refusal{StatusCode: http.StatusBadRequest, Code: "invalid_body", Message: "body is marked base64 but does not decode"}
		}
		b = d
	}
	return b, checkSize(len(b), maxBody)
}

// checkSize refuses a body of n bytes over maxBody (413) when maxBody is positive.
func checkSize(n, maxBody int) *idemlambda.Refusal {
	if maxBody > 0 && n > maxBody {
		return &idemlambda.Refusal{StatusCode: http.StatusRequestEntityTooLarge, Code: "body_too_large", Message: fmt.Sprintf("body is %d bytes or more, over the limit of %d", n, maxBody)}
	}
	return nil
}

// CheckRequest does what every handler behind an HTTP API needs before any
// write: it reads the scope from the verified JWT claim (401 if there is
// none; claim "" is "sub"), decodes a base64 body, and enforces the body
// limit (413).
func CheckRequest(req *events.APIGatewayV2HTTPRequest, claim string, maxBody int) (scope string, body []byte, refusal *idemlambda.Refusal) {
	scope = JWTClaim(req, claim)
	if r := CheckScope(scope); r != nil {
		return "", nil, r
	}
	body, refusal = DecodeBody(req.Body, req.IsBase64Encoded, maxBody)
	if refusal != nil {
		return "", nil, refusal
	}
	return scope, body, nil
}

// JWTClaim is the claim that API Gateway's JWT authorizer verified ("" if
// none; claim "" is "sub"). No header can set it.
func JWTClaim(req *events.APIGatewayV2HTTPRequest, claim string) string {
	if claim == "" {
		claim = "sub"
	}
	if a := req.RequestContext.Authorizer; a != nil && a.JWT != nil {
		return a.JWT.Claims[claim]
	}
	return ""
}

// HeaderValue looks a header up by name, in any case. API Gateway lowercases
// names in payload 2.0, but a test event or another front end may not.
func HeaderValue(headers map[string]string, name string) (string, bool) {
	if v, ok := headers[strings.ToLower(name)]; ok {
		return v, true
	}
	for k, v := range headers {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// ClaimStrings renders a JWT's claims as API Gateway's HTTP API hands them
// to a function (requestContext.authorizer.jwt.claims): every value a
// string, a number in its shortest decimal form. A claim whose value is
// null is left out, as API Gateway leaves it out: a token whose sub is null
// names no caller. (API Gateway developer guide, "Control access to HTTP
// APIs with JWT authorizers", http-api-jwt-authorizer.html.)
func ClaimStrings(claims map[string]any) map[string]string {
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		switch v := v.(type) {
		case nil:
			continue
		case string:
			out[k] = v
		case float64:
			out[k] = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}
