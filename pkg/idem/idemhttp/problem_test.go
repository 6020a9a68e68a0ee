package idemhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// TestAConflictsProblemIsTheDoorsOwn: a ConflictFunc that answers a
// business conflict with idemhttp.Problem gets the door's own problem
// details, typed under the door's ProblemBase (type, title, status,
// detail, code), and the answer is stored: the retry replays it, marked,
// without running the handler. A ConflictFunc that returns a *Refusal
// instead gets the same body, and nothing stored: the record is lapsed and
// the retry runs the handler again.
func TestAConflictsProblemIsTheDoorsOwn(t *testing.T) {
	const base = "https://example.com/problems#"
	f := testbed.New(t)
	var runs atomic.Int32
	h := idemhttp.Wrap(f.Store, nil, func(ctx context.Context, req idemhttp.Request[http.Request, struct{}], tx *idem.Tx) (idem.Response, error) {
		runs.Add(1)
		refuse := req.Event.URL.Query().Get("refuse") != ""
		tx.Add(f.OrderPut(req.Scope, "o1", req.Key), func(old map[string]types.AttributeValue) (idem.Response, error) {
			detail := "order o1 exists, made under " + testbed.Str(old, "note")
			if refuse {
				return idem.Response{}, &idemhttp.Refusal{StatusCode: http.StatusConflict, Code: "order_exists", Message: detail}
			}
			return idemhttp.Problem(base, http.StatusConflict, "order_exists", detail), nil
		})
		return idem.Response{StatusCode: 201, Body: []byte("made o1")}, nil
	}, func(o *idemhttp.Options[http.Request]) {
		o.Scope = func(*http.Request) string { return "alice" }
		o.ProblemBase = base
	})
	send := func(path, key string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("POST", path, strings.NewReader(`{}`))
		r.Header.Set(idemhttp.HeaderIdempotencyKey, key)
		h.ServeHTTP(rec, r)
		return rec
	}
	if first := send("/orders", "k1"); first.Code != 201 {
		t.Fatalf("first = %d %s", first.Code, first.Body)
	}
	want := map[string]any{"type": base + "order_exists", "title": "Conflict", "status": 409.0, "detail": "order o1 exists, made under k1", "code": "order_exists"}
	check := func(what string, rec *httptest.ResponseRecorder, replayed string, runsThen int32) {
		t.Helper()
		var got map[string]any
		if rec.Code != 409 || rec.Header().Get("Content-Type") != problemJSON || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
			t.Fatalf("%s = %d %s %s, want 409 problem details", what, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: %s is %v, want %v (%s)", what, k, got[k], v, rec.Body)
			}
		}
		if rec.Header().Get(idemhttp.HeaderReplayed) != replayed || runs.Load() != runsThen {
			t.Fatalf("%s: replayed %q after %d runs, want %q after %d", what, rec.Header().Get(idemhttp.HeaderReplayed), runs.Load(), replayed, runsThen)
		}
	}
	check("the conflict", send("/orders", "k2"), "", 2)
	check("its retry", send("/orders", "k2"), "true", 2)
	if rec := f.Record("alice", "k2"); testbed.Str(rec, "status") != "COMPLETED" {
		t.Fatalf("record %v, want the conflict's answer stored", rec)
	}
	check("a refusal from the conflict", send("/orders?refuse=1", "k3"), "", 3)
	check("its retry", send("/orders?refuse=1", "k3"), "", 4)
	if rec := f.Record("alice", "k3"); testbed.Str(rec, "status") != "IN_PROGRESS" || testbed.Num(rec, "lease_until") != "0" {
		t.Fatalf("record %v, want the refused key lapsed, nothing stored", rec)
	}
}

// TestProblemWithoutABaseIsAboutBlank: Problem with base "" is RFC 9457's
// "about:blank", whose title is the status's text, as the door's own
// problems are without a ProblemBase.
func TestProblemWithoutABaseIsAboutBlank(t *testing.T) {
	r := idemhttp.Problem("", http.StatusPaymentRequired, "card_declined", "the card was declined")
	var got map[string]any
	if err := json.Unmarshal(r.Body, &got); err != nil || r.StatusCode != 402 || r.Header["Content-Type"] != problemJSON ||
		got["type"] != "about:blank" || got["title"] != "Payment Required" || got["status"] != 402.0 || got["code"] != "card_declined" || got["detail"] != "the card was declined" {
		t.Fatalf("%d %v %s (%v)", r.StatusCode, r.Header, r.Body, err)
	}
}

// problemJSON is the media type of problem details (RFC 9457).
const problemJSON = "application/problem+json"

// problemCode is the code member of a problem details body ("" if none).
func problemCode(body string) string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal([]byte(body), &p) // a body that is not one has no code
	return p.Code
}
