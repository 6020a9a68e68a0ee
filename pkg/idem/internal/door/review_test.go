package door_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/internal/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

type sku struct {
	SKU string `json:"sku"`
}

// TestATypedNilRefusalIsNoRefusal: a Parse that hands back a nil *Refusal
// as its error (the habit of a (B, *Refusal) helper) has refused nothing:
// the handler runs with the parsed body, under the request's fingerprint,
// on the engine and on the fake alike.
func TestATypedNilRefusalIsNoRefusal(t *testing.T) {
	parse := func(body []byte) (sku, error) {
		var s sku
		var refusal *httpapi.Refusal // nil
		if json.Unmarshal(body, &s) != nil || s.SKU == "" {
			refusal = &httpapi.Refusal{StatusCode: 400, Code: "invalid_request", Message: "sku required"}
		}
		return s, refusal
	}
	for name, s := range map[string]idemlambda.Doer{"engine": newFixture(t).Store, "fake": newFake()} {
		var got []string
		h := idemlambda.HTTPAPI(s, parse, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, sku], tx *idem.Tx) (idem.Response, error) {
			got = append(got, req.Body.SKU)
			return idem.Response{StatusCode: 201}, nil
		})
		first, _ := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": "k1"}, `{"sku":"tea"}`))
		other, _ := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": "k1"}, `{"sku":"cake"}`))
		bad, _ := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": "k2"}, `{}`))
		if first.StatusCode != 201 || len(got) != 1 || got[0] != "tea" || other.StatusCode != 422 || bad.StatusCode != 400 {
			t.Errorf("%s: %d with bodies %v, then another body %d, a refusal %d; want 201 with tea, 422, 400", name, first.StatusCode, got, other.StatusCode, bad.StatusCode)
		}
	}
}

// TestAHandlersTypedNilRefusalIsNoRefusal: a handler that returns its
// response with a nil *Refusal as the error (the habit of a helper that
// returns *Refusal) has refused nothing: the response is stored and
// replayed, and nothing panics on the way (a nil *Refusal's Error).
func TestAHandlersTypedNilRefusalIsNoRefusal(t *testing.T) {
	f := newFixture(t)
	runs := 0
	h := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
		runs++
		var refusal *idemlambda.Refusal // nil: nothing to refuse
		return idem.Response{StatusCode: 201, Body: []byte("made")}, refusal
	})
	for i, want := range []string{"", "true"} {
		r, err := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": "k1"}, `{}`))
		if err != nil || r.StatusCode != 201 || r.Body != "made" || r.Headers[idemlambda.HeaderReplayed] != want || runs != 1 {
			t.Fatalf("call %d: %d %s %v %v after %d runs, want the 201 stored and replayed", i, r.StatusCode, r.Body, r.Headers, err, runs)
		}
	}
	var nilRefusal *httpapi.Refusal
	if nilRefusal.Error() == "" || (*idemlambda.Refusal)(nil).Error() == "" {
		t.Fatal("a nil refusal's Error is empty")
	}
}

// TestAHandlersRefusalIsItsStatus: a handler that returns a *Refusal is
// answered with its status and code, no Retry-After, and nothing stored:
// its retry runs the handler again.
func TestAHandlersRefusalIsItsStatus(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	h := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
		runs.Add(1)
		return idem.Response{}, &idemlambda.Refusal{StatusCode: 404, Code: "not_found", Message: "no such order"}
	})
	for i := 1; i <= 2; i++ {
		r, _ := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": "k1"}, `{}`))
		if r.StatusCode != 404 || !strings.Contains(r.Body, `"code":"not_found"`) || r.Headers["Retry-After"] != "" || runs.Load() != int32(i) {
			t.Fatalf("call %d: %d %s %v after %d runs; want the handler's 404, no Retry-After, run again", i, r.StatusCode, r.Body, r.Headers, runs.Load())
		}
		checkProblem(t, r.StatusCode, r.Headers["Content-Type"], []byte(r.Body))
	}
}

// TestAnUnstored5xxCarriesNoTransmissionHeaders: the handler's final 5xx
// goes back as it is, but for the headers that describe one transmission
// (a stray Idempotent-Replayed among them): a first answer is never marked
// a replay.
func TestAnUnstored5xxCarriesNoTransmissionHeaders(t *testing.T) {
	h := idemlambda.HTTPAPI(newFake(), nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 502, Header: map[string]string{"Idempotent-Replayed": "true", "Content-Length": "999", "X-Ok": "1"}}, nil
	})
	r, _ := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": "k1"}, `{}`))
	if r.StatusCode != 502 || r.Headers["X-Ok"] != "1" || r.Headers[idemlambda.HeaderReplayed] != "" || r.Headers["Content-Length"] != "" {
		t.Fatalf("%d %v, want the 502 with X-Ok alone", r.StatusCode, r.Headers)
	}
}

// TestAScopeOverTheLimitIs401: a verified identity over MaxScopeLength
// cannot be a scope: 401 before anything is written, on every HTTP door;
// one of exactly the limit is served.
func TestAScopeOverTheLimitIs401(t *testing.T) {
	for _, d := range drivers {
		call := d.make(newFake(), func(context.Context, string, string, []byte) (int, string) { return 201, "made" })
		at := call(doorCall{strings.Repeat("s", idem.MaxScopeLength), []string{"k1"}, `{}`})
		over := call(doorCall{strings.Repeat("s", idem.MaxScopeLength+1), []string{"k1"}, `{}`})
		if at.status != 201 || over.status != http.StatusUnauthorized {
			t.Errorf("%s: %d at the limit, %d over it; want 201 and 401", d.name, at.status, over.status)
		}
	}
}
