package door_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// TestTheErrorTypesAreDefinedWhereUsersImportThem: idemhttp's Refusal and
// TransientError are struct types of its own, not aliases, so that go doc
// of idemhttp shows their fields; idemlambda's names are aliases of them,
// and no other package of the library declares a type of either name.
func TestTheErrorTypesAreDefinedWhereUsersImportThem(t *testing.T) {
	fields, aliases := map[string][]string{}, map[string]string{}
	err := filepath.WalkDir(filepath.Join("..", "..", ".."), func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := filepath.Base(filepath.Dir(name))
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || (ts.Name.Name != "Refusal" && ts.Name.Name != "TransientError") {
				return true
			}
			what := pkg + "." + ts.Name.Name
			st, isStruct := ts.Type.(*ast.StructType)
			switch {
			case ts.Assign.IsValid():
				aliases[what] = types.ExprString(ts.Type)
			case !isStruct:
				t.Errorf("%s is not a struct type", what)
			default:
				for _, fl := range st.Fields.List {
					for _, n := range fl.Names {
						fields[what] = append(fields[what], n.Name)
					}
				}
			}
			return false
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(fields); got != "map[idemhttp.Refusal:[StatusCode Code Message] idemhttp.TransientError:[StatusCode RetryAfter Code Err]]" {
		t.Errorf("the library defines %s; want idemhttp's two types alone", got)
	}
	if got := fmt.Sprint(aliases); got != "map[idemlambda.Refusal:idemhttp.Refusal idemlambda.TransientError:idemhttp.TransientError]" {
		t.Errorf("the library's aliases are %s; want idemlambda's names for idemhttp's types alone", got)
	}
	var _ *idemhttp.Refusal = (*idemlambda.Refusal)(nil)               //nolint:staticcheck // QF1011: the declared type is the assertion: one type, two names
	var _ *idemhttp.TransientError = (*idemlambda.TransientError)(nil) //nolint:staticcheck // QF1011: the declared type is the assertion
}

// TestEveryNameOfTheErrorTypesIsAnswered: a Parse or a handler may return
// idemhttp's types (idemlambda's names for them), bare or wrapped: every
// door answers each alike, a refusal with its status and
// code and no Retry-After, a transient failure with its status and
// Retry-After; a typed nil refusal, from a Parse or a handler, refuses
// nothing. On
// idemlambda's doors and idemhttp.Wrap, whose error types are their own.
func TestEveryNameOfTheErrorTypesIsAnswered(t *testing.T) {
	cases := []struct {
		name       string
		parse      error // Parse's error, or nil for the handler's
		handler    error
		status     int
		code       string
		retryAfter string
	}{
		{"Parse: *idemhttp.Refusal", &idemhttp.Refusal{StatusCode: 400, Code: "invalid_request", Message: "sku required"}, nil, 400, "invalid_request", ""},
		{"Parse: *idemlambda.Refusal, wrapped", fmt.Errorf("parse: %w", &idemlambda.Refusal{StatusCode: 400, Code: "invalid_request", Message: "sku required"}), nil, 400, "invalid_request", ""},
		{"Parse: *idemlambda.Refusal", &idemlambda.Refusal{StatusCode: 413, Code: "body_too_large", Message: "too long"}, nil, 413, "body_too_large", ""},
		{"Parse: a typed nil *idemhttp.Refusal", (*idemhttp.Refusal)(nil), nil, 201, "", ""},
		{"Parse: a typed nil *idemlambda.Refusal, wrapped", fmt.Errorf("parse: %w", (*idemlambda.Refusal)(nil)), nil, 201, "", ""},
		{"handler: *idemhttp.Refusal", nil, &idemhttp.Refusal{StatusCode: 404, Code: "not_found", Message: "no such order"}, 404, "not_found", ""},
		{"handler: *idemlambda.Refusal, wrapped", nil, fmt.Errorf("lookup: %w", &idemlambda.Refusal{StatusCode: 404, Code: "not_found", Message: "no such order"}), 404, "not_found", ""},
		{"handler: a typed nil *idemhttp.Refusal", nil, (*idemhttp.Refusal)(nil), 201, "", ""},
		{"handler: a typed nil *idemlambda.Refusal, wrapped", nil, fmt.Errorf("lookup: %w", (*idemlambda.Refusal)(nil)), 201, "", ""},
		{"handler: *idemhttp.TransientError", nil, &idemhttp.TransientError{StatusCode: 502, RetryAfter: 1500 * time.Millisecond, Code: "upstream_down", Err: errors.New("secret cause: refused")}, 502, "upstream_down", "2"},
		{"handler: *idemlambda.TransientError, wrapped", nil, fmt.Errorf("charge: %w", &idemlambda.TransientError{Code: "provider_down", Err: errors.New("secret cause: down")}), 503, "provider_down", "1"},
		{"handler: *idemhttp.TransientError, wrapped", nil, fmt.Errorf("upstream: %w", &idemhttp.TransientError{StatusCode: 504, RetryAfter: 3 * time.Second, Code: "upstream_slow", Err: errors.New("secret cause: slow")}), 504, "upstream_slow", "3"},
	}
	for _, tc := range cases {
		parse := func([]byte) (struct{}, error) { return struct{}{}, tc.parse }
		handle := func() (idem.Response, error) { return idem.Response{StatusCode: 201}, tc.handler }
		doors := errorDoors(parse, handle)
		for door, call := range doors {
			t.Run(door+"/"+tc.name, func(t *testing.T) {
				status, body, header := call()
				if status != tc.status || header.Get("Retry-After") != tc.retryAfter {
					t.Fatalf("%d %s, Retry-After %q; want %d, Retry-After %q", status, body, header.Get("Retry-After"), tc.status, tc.retryAfter)
				}
				if tc.code == "" {
					return
				}
				checkProblem(t, status, header.Get("Content-Type"), []byte(body))
				if strings.Contains(body, "secret cause") { // a TransientError's Err is not sent
					t.Fatalf("%s: the cause was sent", body)
				}
				var p struct{ Code string }
				if err := json.Unmarshal([]byte(body), &p); err != nil || p.Code != tc.code {
					t.Fatalf("code %q (%v), want %q", p.Code, err, tc.code)
				}
			})
		}
	}
}

// errorDoors are idemlambda's HTTP API door and idemhttp.Wrap over the
// fake around parse and handle, each sent one request under k1 by alice.
func errorDoors(parse func([]byte) (struct{}, error), handle func() (idem.Response, error)) map[string]func() (int, string, http.Header) {
	return map[string]func() (int, string, http.Header){
		"idemlambda.HTTPAPI": func() (int, string, http.Header) {
			h := idemlambda.HTTPAPI(newFake(), parse, func(context.Context, idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], *idem.Tx) (idem.Response, error) {
				return handle()
			})
			r, _ := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": "k1"}, `{}`))
			hd := http.Header{}
			for k, v := range r.Headers {
				hd.Set(k, v)
			}
			return r.StatusCode, r.Body, hd
		},
		"idemhttp.Wrap": func() (int, string, http.Header) {
			h := idemhttp.Wrap(newFake(), parse, func(context.Context, idemhttp.Request[http.Request, struct{}], *idem.Tx) (idem.Response, error) {
				return handle()
			}, func(o *idemhttp.Options[http.Request]) { o.Scope = func(*http.Request) string { return "alice" } })
			rec := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/orders", strings.NewReader(`{}`))
			r.Header.Set(idemhttp.HeaderIdempotencyKey, "k1")
			h.ServeHTTP(rec, r)
			return rec.Code, rec.Body.String(), rec.Header()
		},
	}
}

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
		var refusal *idemlambda.Refusal // nil
		if json.Unmarshal(body, &s) != nil || s.SKU == "" {
			refusal = &idemlambda.Refusal{StatusCode: 400, Code: "invalid_request", Message: "sku required"}
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
	var nilRefusal *idemhttp.Refusal
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
