package door_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/internal/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// TestTheErrorTypesAreDefinedWhereUsersImportThem: idemhttp's Refusal and
// TransientError are struct types of its own, not aliases, so that go doc
// of idemhttp shows their fields; idemlambda's names are the same types.
func TestTheErrorTypesAreDefinedWhereUsersImportThem(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "idemhttp", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || (ts.Name.Name != "Refusal" && ts.Name.Name != "TransientError") {
				return true
			}
			st, isStruct := ts.Type.(*ast.StructType)
			if ts.Assign.IsValid() || !isStruct {
				t.Errorf("idemhttp.%s is not a struct type of idemhttp's own (an alias hides its fields from go doc)", ts.Name.Name)
				return false
			}
			for _, fl := range st.Fields.List {
				for _, n := range fl.Names {
					fields[ts.Name.Name] = append(fields[ts.Name.Name], n.Name)
				}
			}
			return false
		})
	}
	if got := fmt.Sprint(fields); got != "map[Refusal:[StatusCode Code Message] TransientError:[StatusCode RetryAfter Code Err]]" {
		t.Fatalf("idemhttp declares %s", got)
	}
	var _ *idemhttp.Refusal = (*idemlambda.Refusal)(nil)               //nolint:staticcheck // QF1011: the declared type is the assertion: one type, two names
	var _ *idemhttp.TransientError = (*idemlambda.TransientError)(nil) //nolint:staticcheck // QF1011: the declared type is the assertion
}

// TestEveryNameOfTheErrorTypesIsAnswered: a Parse or a handler may return
// idemhttp's types (idemlambda's names for them) or pkg/httpapi's, bare or
// wrapped: every door answers each alike, a refusal with its status and
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
		{"Parse: *httpapi.Refusal", &httpapi.Refusal{StatusCode: 413, Code: "body_too_large", Message: "too long"}, nil, 413, "body_too_large", ""},
		{"Parse: a typed nil *idemhttp.Refusal", (*idemhttp.Refusal)(nil), nil, 201, "", ""},
		{"Parse: a typed nil *httpapi.Refusal", (*httpapi.Refusal)(nil), nil, 201, "", ""},
		{"handler: *idemhttp.Refusal", nil, &idemhttp.Refusal{StatusCode: 404, Code: "not_found", Message: "no such order"}, 404, "not_found", ""},
		{"handler: *httpapi.Refusal, wrapped", nil, fmt.Errorf("lookup: %w", &httpapi.Refusal{StatusCode: 404, Code: "not_found", Message: "no such order"}), 404, "not_found", ""},
		{"handler: a typed nil *idemhttp.Refusal", nil, (*idemhttp.Refusal)(nil), 201, "", ""},
		{"handler: a typed nil *httpapi.Refusal", nil, (*httpapi.Refusal)(nil), 201, "", ""},
		{"handler: *idemhttp.TransientError", nil, &idemhttp.TransientError{StatusCode: 502, RetryAfter: 1500 * time.Millisecond, Code: "upstream_down", Err: errors.New("secret cause: refused")}, 502, "upstream_down", "2"},
		{"handler: *idemlambda.TransientError, wrapped", nil, fmt.Errorf("charge: %w", &idemlambda.TransientError{Code: "provider_down", Err: errors.New("secret cause: down")}), 503, "provider_down", "1"},
		{"handler: *httpapi.TransientError", nil, &httpapi.TransientError{StatusCode: 504, RetryAfter: 3 * time.Second, Code: "upstream_slow", Err: errors.New("secret cause: slow")}, 504, "upstream_slow", "3"},
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
			r.Header.Set("Idempotency-Key", "k1")
			h.ServeHTTP(rec, r)
			return rec.Code, rec.Body.String(), rec.Header()
		},
	}
}
