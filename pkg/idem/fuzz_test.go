package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
)

// FuzzCanonicalJSON: canonicalisation never panics, refuses with
// ErrInvalidBody only, and what it returns is valid JSON that is its own
// canonical form (so equal fingerprints mean equal canonical bodies).
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `{"a":1,"a":2}`, `[[[[[]]]]]`, "\"\xff\"", `{"a":"\u0000"}`, `1e400`, ` {} `, `{"":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := idem.CanonicalJSON(body)
		if err != nil {
			if !errors.Is(err, idem.ErrInvalidBody) {
				t.Fatalf("error %v is not ErrInvalidBody", err)
			}
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form %q of %q is not JSON", c, body)
		}
		again, err := idem.CanonicalJSON(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("canonical form is not stable: %q -> %q (%v)", c, again, err)
		}
	})
}

// FuzzCanonicalJSONMatchesOld: the canonicaliser gives exactly what the one
// it replaced gave (oldCanonicalJSON, on encoding/json), form for form and
// refusal for refusal, so that no stored fingerprint changes meaning.
func FuzzCanonicalJSONMatchesOld(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsOld(t, body)
	})
}

// FuzzParseKeyHeader: a parsed key is always a valid key, and no header
// makes the parser panic.
func FuzzParseKeyHeader(f *testing.F) {
	for _, s := range []string{`abc`, `"abc"`, `"a\"b"`, `"unterminated`, "a\x00b", strings.Repeat("k", 300), `"a" "b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		key, err := idem.ParseKeyHeader(header)
		if err != nil {
			if !errors.Is(err, idem.ErrInvalidKey) {
				t.Fatalf("error %v is not ErrInvalidKey", err)
			}
			return
		}
		if idem.ValidateKey(key) != nil || !utf8.ValidString(key) {
			t.Fatalf("ParseKeyHeader(%q) = %q, which is not a valid key", header, key)
		}
	})
}

// FuzzHTTPAdapter throws arbitrary headers, keys and bodies at the adapter:
// it never panics, every answer is problem details with a stable code or the
// handler's own, and a request it refuses (4xx) never reaches the handler.
func FuzzHTTPAdapter(f *testing.F) {
	f.Add("k1", `{"a":1}`, "application/json", "alice", false)
	f.Add(`"quoted"`, `{"a":1,"a":2}`, "application/json", "alice", false)
	f.Add("a#b", strings.Repeat("[", 40), "", "bob", false)
	f.Add("", "{}", "text/plain", "", false)
	f.Add(strings.Repeat("k", 256), "\xff\xfe", "application/json", "alice", true)
	f.Add("k\x01", `{"x":"`+strings.Repeat("y", 70000)+`"}`, "application/json", "alice", false)
	f.Fuzz(func(t *testing.T, key, body, contentType, sub string, base64Body bool) {
		db := &memory{items: map[string]map[string]types.AttributeValue{}}
		store, err := idem.New(db, "fuzz-table")
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		h := store.HTTP(func(ctx context.Context, req events.APIGatewayV2HTTPRequest, tx *idem.Tx) (events.APIGatewayV2HTTPResponse, error) {
			ran = true
			if idem.Scope(ctx) == "" {
				t.Fatal("handler ran without a scope")
			}
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "ok"}, nil
		})
		headers := map[string]string{"idempotency-key": key, "content-type": contentType}
		req := apiRequest(sub, headers, body)
		req.IsBase64Encoded = base64Body
		resp, err := h(context.Background(), req)
		if err != nil {
			t.Fatalf("the adapter returned an error instead of an answer: %v", err)
		}
		if resp.StatusCode == 200 {
			if !ran || resp.Body != "ok" {
				t.Fatalf("200 without the handler's answer: %+v", resp)
			}
			return
		}
		if ran && resp.StatusCode < 500 {
			t.Fatalf("refused with %d after the handler ran", resp.StatusCode)
		}
		checkProblem(t, resp.StatusCode, resp.Headers["Content-Type"], []byte(resp.Body))
	})
}

// checkProblem fails t unless an answer is RFC 9457 problem details with
// every member the README promises.
func checkProblem(t *testing.T, status int, contentType string, body []byte) {
	t.Helper()
	var p struct {
		Type, Title, Detail, Code string
		Status                    int
	}
	if contentType != httpapi.ContentType || json.Unmarshal(body, &p) != nil {
		t.Fatalf("answer %d is not problem details: %s %q", status, contentType, body)
	}
	if p.Code == "" || p.Type != httpapi.TypeBase+p.Code || p.Title == "" || p.Status != status || p.Detail == "" {
		t.Fatalf("answer %d lacks a problem member: %q", status, body)
	}
}

// fuzzDoor throws arbitrary identities, keys and bodies at a front door
// built by the named drivers: no panic, and every answer is the handler's
// own (run) or problem details (a refusal before it ran, or a 5xx).
func fuzzDoor(f *testing.F, names ...string) {
	f.Add("alice", "k1", "k2", `{"a":1}`)
	f.Add("", `"quoted"`, "", `{"a":1,"a":2}`)
	f.Add("bob", "a#b", "a,b", strings.Repeat("[", 40))
	f.Add("alice", strings.Repeat("k", 256), "", "\xff\xfe")
	f.Add("alice", "k\x01", "", `{"x":"`+strings.Repeat("y", 70000)+`"}`)
	f.Fuzz(func(t *testing.T, scope, key, second, body string) {
		for _, d := range drivers {
			if !slices.Contains(names, d.name) {
				continue
			}
			store, err := idem.New(&memory{items: map[string]map[string]types.AttributeValue{}}, "fuzz-table")
			if err != nil {
				t.Fatal(err)
			}
			ran := false
			call := d.make(store, func(ctx context.Context, scope, key string, body []byte) (int, string) {
				ran = true
				if scope == "" || idem.ValidateKey(key) != nil {
					t.Fatalf("handler ran with scope %q key %q", scope, key)
				}
				return 200, "ok"
			})
			keys := []string{key}
			if second != "" {
				keys = append(keys, second)
			}
			got := call(doorCall{scope, keys, body})
			if got.status == 200 && ran && got.body == "ok" {
				continue
			}
			if ran && got.status < 500 {
				t.Fatalf("%s: refused with %d after the handler ran", d.name, got.status)
			}
			checkProblem(t, got.status, got.header["Content-Type"], []byte(got.body))
		}
	})
}

func FuzzFunctionURL(f *testing.F) {
	fuzzDoor(f, "Function URL, AWS_IAM", "Function URL, auth NONE, scope from a verified token")
}
func FuzzRESTAPI(f *testing.F) {
	fuzzDoor(f, "REST API payload 1.0, Cognito claims", "REST API payload 1.0, Lambda authorizer")
}
func FuzzALB(f *testing.F) { fuzzDoor(f, "ALB, multi-value headers", "ALB, single-value headers") }
func FuzzMiddleware(f *testing.F) {
	fuzzDoor(f, "net/http middleware on a ServeMux pattern")
}

// FuzzFunction throws arbitrary keys and events at Function: no panic, an
// event is refused only with ErrNoKey, ErrInvalidKey or ErrInvalidBody and
// then never reaches the handler, and one that ran replays its Out.
func FuzzFunction(f *testing.F) {
	f.Add("k1", `{"a":1}`)
	f.Add("", `{}`)
	f.Add(strings.Repeat("k", 256), `[]`)
	f.Add("k\x01", `{"a":1,"a":2}`)
	f.Add("k2", `{"a":`)
	f.Add("k3", "\"\xff\"")
	f.Fuzz(func(t *testing.T, key, body string) {
		store, err := idem.New(&memory{items: map[string]map[string]types.AttributeValue{}}, "fuzz-table")
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		h, err := idem.Function(store, func(ctx context.Context, in fnEvent) (int, error) {
			runs++
			if idem.ValidateKey(in.Key) != nil || idem.TxFrom(ctx) == nil {
				t.Fatalf("handler ran with key %q", in.Key)
			}
			return runs, nil
		}, func(o *idem.FunctionOptions[fnEvent]) {
			o.Scope = "fuzz"
			o.Key = func(in fnEvent) string { return in.Key }
		})
		if err != nil {
			t.Fatal(err)
		}
		ev := fnEvent{Key: key, Body: json.RawMessage(body)}
		first, err := h(context.Background(), ev)
		if err != nil {
			if runs != 0 || !(errors.Is(err, idem.ErrNoKey) || errors.Is(err, idem.ErrInvalidKey) || errors.Is(err, idem.ErrInvalidBody)) {
				t.Fatalf("refused with %v after %d runs", err, runs)
			}
			return
		}
		again, err := h(context.Background(), ev)
		if err != nil || again != first || runs != 1 {
			t.Fatalf("the repeat = %d %v after %d runs, want %d replayed", again, err, runs, first)
		}
	})
}
