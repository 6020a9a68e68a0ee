package door

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/idemkeys/idem/pkg/idem"
)

// Refused is a request turned away before any write, as the door answers
// it: problem details of Status, Code and Message, without Retry-After.
// The door's own checks make it; Config.Errors reads one from a user's
// error, whose public type (idemhttp.Refusal) door cannot import.
type Refused struct {
	Status  int
	Code    string
	Message string
}

// unauthenticated is the 401 of a request without a usable verified identity.
func unauthenticated(detail string) *Refused {
	return &Refused{http.StatusUnauthorized, "unauthenticated", detail}
}

// checkScope refuses an identity that cannot be a scope (401): none, one
// over idem.MaxScopeLength, or one that is not valid UTF-8. DynamoDB's SDK
// writes each invalid byte of a string as U+FFFD, so two such names of one
// length ("m\xfcller" and "m\xf6ller", Latin-1 from a proxy's header)
// would share every key's record: each other's stored responses.
func checkScope(scope string) *Refused {
	switch {
	case scope == "":
		return unauthenticated("no verified identity on this request")
	case len(scope) > idem.MaxScopeLength:
		return unauthenticated(fmt.Sprintf("the verified identity is %d bytes, over the %d a scope may have", len(scope), idem.MaxScopeLength))
	case !utf8.ValidString(scope):
		return unauthenticated("the verified identity is not valid UTF-8, so it cannot be a scope")
	}
	return nil
}

// DecodeBody decodes a body that may be base64 (400 if it does not decode)
// and holds it to maxBody bytes when maxBody is positive (413).
func DecodeBody(body string, isBase64 bool, maxBody int) ([]byte, *Refused) {
	b := []byte(body)
	if isBase64 {
		d, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, &Refused{http.StatusBadRequest, "invalid_body", "body is marked base64 but does not decode"}
		}
		b = d
	}
	return b, CheckSize(len(b), maxBody)
}

// CheckSize refuses a body of n bytes over maxBody (413) when maxBody is positive.
func CheckSize(n, maxBody int) *Refused {
	if maxBody > 0 && n > maxBody {
		return &Refused{http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("body is %d bytes or more, over the limit of %d", n, maxBody)}
	}
	return nil
}

// Unreadable is the 400 of a body that could not be read.
func Unreadable() *Refused {
	return &Refused{http.StatusBadRequest, "invalid_body", "the body could not be read"}
}
