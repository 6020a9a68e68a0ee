package idemlambda

import (
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"unicode/utf8"

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

// httpDoor is every HTTP door of this package: its store, Parse and
// handler, and its options checked and defaulted (the door's own scope
// when Options.Scope is nil).
type httpDoor[E, B any] struct {
	store  Doer
	parse  Parse[B]
	handle Handler[E, B]
	scope  func(*E) string
	door.Config
}

func newDoor[E, B any](s Doer, parse Parse[B], h Handler[E, B], def func(*E) string, optFns []func(*Options[E])) httpDoor[E, B] {
	o := Options[E]{Scope: def}
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Scope == nil {
		o.Scope = func(*E) string { return "" }
	}
	c := door.NewConfig(door.Config{MaxBody: o.MaxBodyBytes, Atomic: o.Atomic, JSON: o.JSON, ProblemBase: o.ProblemBase, Logger: o.Logger, Errors: errorTypes})
	return httpDoor[E, B]{store: s, parse: parse, handle: h, scope: o.Scope, Config: c}
}

// serve is door.Serve around the handler, once the door has read ev into in.
func (d httpDoor[E, B]) serve(ctx context.Context, ev *E, in door.Inbound) idem.Response {
	return door.Serve(ctx, d.store, d.Config, door.Call[B]{Scope: d.scope(ev), In: in, Parse: d.parse,
		Handle: func(ctx context.Context, a door.Admitted[B], tx *idem.Tx) (idem.Response, error) {
			return d.handle(ctx, Request[E, B]{Event: ev, Body: a.Body, Scope: a.Scope, Key: a.Key}, tx)
		}})
}

// errorTypes are the readers of Refusal and TransientError (idemhttp's
// types, under this package's names) that the doors hand door, which
// cannot import idemhttp.
var errorTypes = door.Errors{Refusal: refusalIn, Transient: transientIn}

func refusalIn(err error) (*door.Refused, bool) {
	var r *Refusal
	switch {
	case !errors.As(err, &r):
		return nil, false
	case r == nil:
		return nil, true // a typed nil: no refusal
	}
	return &door.Refused{Status: r.StatusCode, Code: r.Code, Message: r.Message}, true
}

func transientIn(err error) *door.Transient {
	var t *TransientError
	if !errors.As(err, &t) || t == nil {
		return nil
	}
	return &door.Transient{Status: t.StatusCode, RetryAfter: t.RetryAfter, Code: t.Code}
}

// inbound reads what the checks need of an event's headers and body.
func inbound(ev eventParts, maxBody int) door.Inbound {
	b, refusal := door.DecodeBody(*ev.body, *ev.isBase64, maxBody)
	*ev.body, *ev.isBase64 = string(b), false
	key, hasKey := headerValue(ev.single, ev.multi, door.HeaderIdempotencyKey)
	ct, _ := headerValue(ev.single, ev.multi, "Content-Type")
	return door.Inbound{Key: key, HasKey: hasKey, ContentType: ct, Body: b, Refusal: refusal}
}

// eventParts are an event's headers, in both forms it may carry them, and
// its body, which inbound decodes in place.
type eventParts struct {
	single   map[string]string
	multi    map[string][]string
	body     *string
	isBase64 *bool
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
	if v, ok := single[strings.ToLower(name)]; ok {
		return v, true
	}
	for k, v := range single {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
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
