package idemlambda

import (
	"context"
	"encoding/base64"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/idemkeys/idem/internal/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/internal/door"
)

// The HTTP doors' types are idemhttp's, with the event types for E:
// one Request, Handler, Parse and Options for every HTTP door, and the
// errors a Parse or a handler returns (go doc idemhttp.Refusal shows each
// with its fields).
type (
	Doer              = idemhttp.Doer
	Request[E, B any] = idemhttp.Request[E, B]
	Handler[E, B any] = idemhttp.Handler[E, B]
	Parse[B any]      = idemhttp.Parse[B]
	Options[E any]    = idemhttp.Options[E]
	Refusal           = idemhttp.Refusal
	TransientError    = idemhttp.TransientError
)

// HeaderReplayed marks a replayed response: "Idempotent-Replayed: true".
const HeaderReplayed = idemhttp.HeaderReplayed

// Problem is idemhttp.Problem: the door's own problem details answer for
// status, code and detail, typed under base (the door's ProblemBase), for
// a handler or a ConflictFunc to return and the door to store.
func Problem(base string, status int, code, detail string) idem.Response {
	return idemhttp.Problem(base, status, code, detail)
}

// httpDoor is every HTTP door of this package: its options checked and
// defaulted (the door's own scope when Options.Scope is nil).
type httpDoor[E any] struct {
	scope func(*E) string
	door.Config
}

func newDoor[E any](def func(*E) string, optFns []func(*Options[E])) httpDoor[E] {
	o := Options[E]{Scope: def}
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Scope == nil {
		o.Scope = func(*E) string { return "" }
	}
	return httpDoor[E]{o.Scope, door.NewConfig[Refusal, TransientError](o.MaxBodyBytes, o.Atomic, o.ProblemBase, o.Logger)}
}

// serve is door.Serve around h, once the door has read ev into in.
func serve[E, B any](ctx context.Context, d httpDoor[E], s Doer, ev *E, in door.Inbound, parse Parse[B], h Handler[E, B]) idem.Response {
	return door.Serve(ctx, s, d.Config, ev, d.scope(ev), in, parse, func(ctx context.Context, ev *E, body B, scope, key string, tx *idem.Tx) (idem.Response, error) {
		return h(ctx, Request[E, B]{Event: ev, Body: body, Scope: scope, Key: key}, tx)
	})
}

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
