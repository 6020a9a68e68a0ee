package door_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// jsonDoors are idemlambda's HTTP API door and idemhttp.Wrap over s, with
// Options.JSON as asked, each with a Parse that decodes every body as
// JSON (case-insensitive and last-wins, as encoding/json reads names),
// answering the items it read. Each sends one request under k1 by alice,
// its body declared as contentType.
func jsonDoors(s idemlambda.Doer, asJSON bool, ran *int) map[string]func(contentType, body string) (int, string) {
	type order struct{ Items string }
	parse := func(b []byte) (order, error) {
		var o order
		return o, json.Unmarshal(b, &o)
	}
	answer := func(o order) (idem.Response, error) {
		*ran++
		return idem.Response{StatusCode: 201, Body: []byte(o.Items)}, nil
	}
	return map[string]func(string, string) (int, string){
		"idemlambda.HTTPAPI": func(contentType, body string) (int, string) {
			h := idemlambda.HTTPAPI(s, parse, func(_ context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, order], _ *idem.Tx) (idem.Response, error) {
				return answer(req.Body)
			}, func(o *idemlambda.Options[events.APIGatewayV2HTTPRequest]) { o.JSON = asJSON })
			r, _ := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": "k1", "content-type": contentType}, body))
			return r.StatusCode, r.Body
		},
		"idemhttp.Wrap": func(contentType, body string) (int, string) {
			h := idemhttp.Wrap(s, parse, func(_ context.Context, req idemhttp.Request[http.Request, order], _ *idem.Tx) (idem.Response, error) {
				return answer(req.Body)
			}, func(o *idemhttp.Options[http.Request]) {
				o.Scope = func(*http.Request) string { return "alice" }
				o.JSON = asJSON
			})
			rec := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/orders", strings.NewReader(body))
			r.Header.Set(idemhttp.HeaderIdempotencyKey, "k1")
			r.Header.Set("Content-Type", contentType)
			h.ServeHTTP(rec, r)
			return rec.Code, rec.Body.String()
		},
	}
}

// TestWithJSONEveryBodyIsHeldToTheCanonicalForm: with Options.JSON, a body
// declared text/plain whose member names differ only in case ("items" and
// "ITEMS", which a first-wins reader and encoding/json read differently)
// is refused with 400 invalid_json before the key is claimed, as one
// declared JSON is: the handler never runs, the store is never called,
// and the corrected request under the same key is then served.
func TestWithJSONEveryBodyIsHeldToTheCanonicalForm(t *testing.T) {
	const folded, corrected = `{"items":"tea x2","ITEMS":"coffee x9"}`, `{"items":"tea x2"}`
	for _, contentType := range []string{"text/plain", "application/json", "application/x-www-form-urlencoded"} {
		s, ran := newFake(), 0
		for name, call := range jsonDoors(s, true, &ran) {
			s.recs, ran = map[string]*fakeRecord{}, 0
			status, body := call(contentType, folded)
			if status != 400 || !strings.Contains(body, `"code":"invalid_json"`) || ran != 0 || s.calls.Load() != 0 {
				t.Fatalf("%s, %s: %d %s, handler ran %d times, %d store calls; want 400 invalid_json before any call", name, contentType, status, body, ran, s.calls.Load())
			}
			if status, body := call(contentType, corrected); status != 201 || body != "tea x2" || ran != 1 {
				t.Fatalf("%s, %s: the corrected request under the same key: %d %s; want 201 with tea", name, contentType, status, body)
			}
			s.calls.Store(0)
		}
	}
}

// TestWithoutJSONABodyNotDeclaredJSONIsTakenByteForByte: without
// Options.JSON only a body declared JSON (or declared as nothing) is
// canonicalised; one declared text/plain reaches Parse as it is, and its
// fingerprint is its bytes.
func TestWithoutJSONABodyNotDeclaredJSONIsTakenByteForByte(t *testing.T) {
	s := newFake()
	for name, call := range jsonDoors(s, false, new(int)) {
		s.recs = map[string]*fakeRecord{}
		if status, body := call("text/plain", `{"items":"tea x2","ITEMS":"coffee x9"}`); status != 201 || body != "coffee x9" {
			t.Errorf("%s: %d %s; want the body as Parse read it (coffee, the last of its names)", name, status, body)
		}
	}
}
