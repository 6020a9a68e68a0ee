package door_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// The fuzzers run each door over two stand-ins for DynamoDB, so that an
// input costs no network: the fake Doer (the protocol's answers in a map)
// and a real *idem.Store over testbed.Memory (the library's own calls and
// conditions). TestEveryDoorRefusesBeforeWriting holds every door on the
// engine itself.
func doers(t *testing.T) map[string]idemlambda.Doer {
	store, err := idem.New(testbed.NewMemory(), "fuzz-table")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]idemlambda.Doer{"fake": newFake(), "Store over memory": store}
}

// FuzzParseKey: a parsed key is always a valid key, and no header makes
// the parser panic.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{`abc`, `"abc"`, `"a\"b"`, `"unterminated`, "a\x00b", strings.Repeat("k", 300), `"a" "b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		key, err := idemhttp.ParseKey(header)
		if err != nil {
			if !errors.Is(err, idem.ErrInvalidKey) {
				t.Fatalf("error %v is not ErrInvalidKey", err)
			}
			return
		}
		if idem.ValidateKey(key) != nil || !utf8.ValidString(key) {
			t.Fatalf("ParseKey(%q) = %q, which is not a valid key", header, key)
		}
	})
}

// FuzzHTTPAPI throws arbitrary headers, keys and bodies at the HTTP API's
// door: it never panics, every answer is problem details with a stable code
// or the handler's own, and a request it refuses (4xx) never reaches the
// handler.
func FuzzHTTPAPI(f *testing.F) {
	f.Add("k1", `{"a":1}`, "application/json", "alice", false)
	f.Add(`"quoted"`, `{"a":1,"a":2}`, "application/json", "alice", false)
	f.Add("a#b", strings.Repeat("[", 40), "", "bob", false)
	f.Add("", "{}", "text/plain", "", false)
	f.Add(strings.Repeat("k", 256), "\xff\xfe", "application/json", "alice", true)
	f.Add("k\x01", `{"x":"`+strings.Repeat("y", 70000)+`"}`, "application/json", "alice", false)
	f.Fuzz(func(t *testing.T, key, body, contentType, sub string, base64Body bool) {
		for name, s := range doers(t) {
			ran := false
			h := idemlambda.HTTPAPI(s, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
				ran = true
				if req.Scope == "" || idem.ValidateKey(req.Key) != nil {
					t.Fatalf("%s: handler ran with scope %q key %q", name, req.Scope, req.Key)
				}
				return idem.Response{StatusCode: 200, Body: []byte("ok")}, nil
			})
			req := apiRequest(sub, map[string]string{"idempotency-key": key, "content-type": contentType}, body)
			req.IsBase64Encoded = base64Body
			resp, err := h(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: the door returned an error instead of an answer: %v", name, err)
			}
			if resp.StatusCode == 200 {
				if !ran || resp.Body != "ok" {
					t.Fatalf("%s: 200 without the handler's answer: %+v", name, resp)
				}
				continue
			}
			if ran && resp.StatusCode < 500 {
				t.Fatalf("%s: refused with %d after the handler ran", name, resp.StatusCode)
			}
			checkProblem(t, resp.StatusCode, resp.Headers["Content-Type"], []byte(resp.Body))
		}
	})
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
			for name, s := range doers(t) {
				ran := false
				call := d.make(s, func(ctx context.Context, scope, key string, body []byte) (int, string) {
					ran = true
					if scope == "" || idem.ValidateKey(key) != nil {
						t.Fatalf("%s over %s: handler ran with scope %q key %q", d.name, name, scope, key)
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
					t.Fatalf("%s over %s: refused with %d after the handler ran", d.name, name, got.status)
				}
				checkProblem(t, got.status, got.header["Content-Type"], []byte(got.body))
			}
		}
	})
}

func FuzzFunctionURL(f *testing.F) {
	fuzzDoor(f, "Function URL, AWS_IAM", "Function URL, auth NONE, scope from a verified token")
}
func FuzzRESTAPI(f *testing.F) {
	fuzzDoor(f, "REST API payload 1.0, Cognito claims", "REST API payload 1.0, Lambda authorizer")
}
func FuzzALB(f *testing.F)  { fuzzDoor(f, "ALB, multi-value headers", "ALB, single-value headers") }
func FuzzWrap(f *testing.F) { fuzzDoor(f, "net/http on a ServeMux pattern") }

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
		for name, s := range doers(t) {
			runs := 0
			h := idemlambda.Function(s, func(ctx context.Context, ev idemlambda.Event[fnEvent], tx *idem.Tx) (int, error) {
				runs++
				if idem.ValidateKey(ev.Key) != nil || tx == nil {
					t.Fatalf("%s: handler ran with key %q", name, ev.Key)
				}
				return runs, nil
			}, func(o *idemlambda.ConsumerOptions[fnEvent]) {
				o.Scope = "fuzz"
				o.Key = func(in *fnEvent) (string, error) { return in.Key, nil }
			})
			ev := fnEvent{Key: key, Body: json.RawMessage(body)}
			first, err := h(context.Background(), ev)
			if err != nil {
				if runs != 0 || (!errors.Is(err, idemlambda.ErrNoKey) && !errors.Is(err, idem.ErrInvalidKey) && !errors.Is(err, idem.ErrInvalidBody)) {
					t.Fatalf("%s: refused with %v after %d runs", name, err, runs)
				}
				continue
			}
			again, err := h(context.Background(), ev)
			if err != nil || again != first || runs != 1 {
				t.Fatalf("%s: the repeat = %d %v after %d runs, want %d replayed", name, again, err, runs, first)
			}
		}
	})
}
