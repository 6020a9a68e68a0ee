package idemlambda

import (
	"encoding/base64"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/idemkeys/idem/pkg/httpapi"
	"github.com/idemkeys/idem/pkg/idem/internal/door"
)

// Doer is the part of *idem.Store a door calls: a fake of it tests a
// handler without DynamoDB.
type Doer = door.Doer

// Request is what an HTTP door hands its handler: the event as it came
// (its body decoded from base64), Body as Parse made it, the caller's
// scope and the idempotency key.
type Request[E, B any] = door.Request[E, B]

// Handler is every HTTP door's handler: it adds its business writes to tx
// and returns the response to store and send. An error lapses the lease
// and stores nothing (a TransientError names the status to answer); a
// final 5xx is sent and not stored.
type Handler[E, B any] = door.Handler[E, B]

// Parse turns the body into the handler's value before the key is claimed;
// an error is the answer (a *Refusal as it says, any other 400).
type Parse[B any] = door.Parse[B]

// Options configure every HTTP door. Options.Scope defaults to the door's
// verified identity, as each door says.
type Options[E any] = door.Options[E]

// Refusal is a Parse error that says its status and problem code.
type Refusal = httpapi.Refusal

// TransientError is a handler's failure the client should retry.
type TransientError = door.TransientError

// HeaderReplayed marks a replayed response: "Idempotent-Replayed: true".
const HeaderReplayed = door.HeaderReplayed

// inbound reads what the checks need of an event's headers and body.
func inbound(single map[string]string, multi map[string][]string, body *string, isBase64 *bool, maxBody int) door.Inbound {
	b, refusal := httpapi.DecodeBody(*body, *isBase64, maxBody)
	*body, *isBase64 = string(b), false
	key, hasKey := headerValue(single, multi, door.HeaderIdempotencyKey)
	ct, _ := headerValue(single, multi, "Content-Type")
	return door.Inbound{Key: key, HasKey: hasKey, ContentType: ct, Body: b, Refusal: refusal}
}

// headerValue looks a header up in both forms an event may carry, in any
// case; the values of a repeated header are comma-joined, as HTTP joins
// them.
func headerValue(single map[string]string, multi map[string][]string, name string) (string, bool) {
	for k, vs := range multi {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return strings.Join(vs, ","), true
		}
	}
	return httpapi.HeaderValue(single, name)
}

// rawQuery is a query string from an event's parameters, in a stable order.
func rawQuery(single map[string]string, multi map[string][]string) string {
	v := url.Values{}
	for k, s := range single {
		v.Set(k, s)
	}
	for k, vs := range multi {
		v[k] = vs
	}
	return v.Encode()
}

// encodeBody is a stored body as a Lambda event carries it: a body that is
// not UTF-8 travels as base64, which the service turns back into bytes.
func encodeBody(b []byte) (body string, isBase64 bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}
