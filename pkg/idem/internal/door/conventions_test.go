package door_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// Every front door: the first call runs the handler, a retry replays it
// marked Idempotent-Replayed, a concurrent one is 409.
// TestEveryDoorRefusesBeforeWriting has the refusals (the 422 among them).
func TestEveryFrontDoor(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			f := newFixture(t, func(o *idem.Options) { o.Lease = 8 * time.Second })
			var runs atomic.Int32
			held, release := make(chan struct{}), make(chan struct{})
			call := d.make(f.Store, func(ctx context.Context, scope, key string, body []byte) (int, string) {
				runs.Add(1)
				if key == "slow" {
					close(held)
					<-release
				}
				return 201, `{"scope":"` + scope + `","key":"` + key + `","body":` + string(body) + `}`
			})
			first := call(doorCall{"alice", []string{"k1"}, `{"a":1}`})
			if first.status != 201 || first.body != `{"scope":"alice","key":"k1","body":{"a":1}}` || first.header[idemlambda.HeaderReplayed] != "" {
				t.Fatalf("first = %+v", first)
			}
			again := call(doorCall{"alice", []string{`"k1"`}, `{ "a" : 1 }`})
			if again.status != 201 || again.body != first.body || again.header[idemlambda.HeaderReplayed] != "true" || runs.Load() != 1 {
				t.Fatalf("replay = %+v after %d runs", again, runs.Load())
			}
			if other := call(doorCall{"bob", []string{"k1"}, `{"a":1}`}); other.status != 201 || !strings.Contains(other.body, `"bob"`) {
				t.Fatalf("another caller's k1 = %+v, want its own run", other)
			}
			done := make(chan struct{})
			go func() { call(doorCall{"alice", []string{"slow"}, `{}`}); close(done) }()
			<-held
			busy := call(doorCall{"alice", []string{"slow"}, `{}`})
			close(release)
			<-done
			if busy.status != 409 || busy.header["Retry-After"] != "8" || !strings.Contains(busy.body, `"request_in_progress"`) {
				t.Fatalf("concurrent = %+v, want 409 with Retry-After: 8", busy)
			}
		})
	}
}

// TestEveryDoorNeverStoresAFinal5xx: a handler's own final 5xx, returned
// with a nil error, is not stored on any door, from 500 on: it goes back
// as it is, the lease lapses, and the retry runs the handler again.
func TestEveryDoorNeverStoresAFinal5xx(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			f := newFixture(t)
			for _, status := range []int{500, 503} {
				var runs atomic.Int32
				call := d.make(f.Store, func(ctx context.Context, scope, key string, body []byte) (int, string) {
					runs.Add(1)
					return status, "upstream down"
				})
				key := fmt.Sprint("k", status)
				c := doorCall{"alice", []string{key}, `{"a":1}`}
				for i := 1; i <= 2; i++ {
					a := call(c)
					if a.status != status || a.body != "upstream down" || a.header[idemlambda.HeaderReplayed] != "" || runs.Load() != int32(i) {
						t.Fatalf("call %d: %d %q %v after %d runs; want the handler's %d, run again", i, a.status, a.body, a.header, runs.Load(), status)
					}
				}
				if rec := f.Record("alice", key); testbed.Str(rec, "status") != "IN_PROGRESS" || testbed.Num(rec, "lease_until") != "0" {
					t.Fatalf("%d: record %v, want the key lapsed (in progress, lease_until 0)", status, rec)
				}
			}
		})
	}
}

// TestEveryErrorMapsToARealStatus: every error a door answers is a real
// status, and only what may succeed on a retry says retry (a 503 with
// Retry-After); a definite failure is a 500 without it.
func TestEveryErrorMapsToARealStatus(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status int
		retry  bool
	}{
		{"a TransientError without a status", &idemlambda.TransientError{Code: "provider_down", Err: errors.New("down")}, 503, true},
		{"a TransientError with a 4xx", &idemlambda.TransientError{StatusCode: 404, Code: "odd", Err: errors.New("odd")}, 503, true},
		{"a TransientError with its own 5xx", &idemlambda.TransientError{StatusCode: 502, Code: "bad_gateway", Err: errors.New("502")}, 502, true},
		{"a TransientError with the first 5xx", &idemlambda.TransientError{StatusCode: 500, Code: "internal", Err: errors.New("500")}, 500, true},
		{"a TransientError with the last 5xx", &idemlambda.TransientError{StatusCode: 599, Code: "odd_5xx", Err: errors.New("599")}, 599, true},
		{"a TransientError past the 5xx", &idemlambda.TransientError{StatusCode: 600, Code: "odd", Err: errors.New("600")}, 503, true},
		{"a business condition with no conflict answer", fmt.Errorf("wrapped: %w", idem.ErrWriteConditionFailed), 500, false},
		{"a limit", &idem.LimitError{What: "write 0 (bytes)", Size: 500 << 10, Limit: 400 << 10, Err: idem.ErrItemTooLarge}, 500, false},
		{"an invalid write", fmt.Errorf("%w: two actions on one item", idem.ErrInvalidWrite), 500, false},
		{"an unknown error of the handler", errors.New("something broke"), 503, true},
	}
	// Every door answers errors through the one mapping; the HTTP API's
	// door is the one whose handler returns them here, over the fake.
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := idemlambda.HTTPAPI(newFake(), nil, func(context.Context, idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], *idem.Tx) (idem.Response, error) {
				return idem.Response{}, tc.err
			})
			r, _ := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": fmt.Sprint("kerr-", i)}, `{}`))
			if r.StatusCode != tc.status || (r.Headers["Retry-After"] != "") != tc.retry {
				t.Fatalf("%d, Retry-After %q; want %d, retry %v", r.StatusCode, r.Headers["Retry-After"], tc.status, tc.retry)
			}
			checkProblem(t, r.StatusCode, r.Headers["Content-Type"], []byte(r.Body))
		})
	}
}

// TestAMisconfiguredTableIsADefiniteFailure: a table that does not exist is
// no "retrying is safe": every door answers a non-retryable 500
// "misconfigured", on Do and DoAtomic alike.
func TestAMisconfiguredTableIsADefiniteFailure(t *testing.T) {
	s, err := idem.New(idemtest.Client(t), "no-such-table")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drivers {
		a := d.make(s, func(context.Context, string, string, []byte) (int, string) { return 201, "" })(doorCall{"alice", []string{"k1"}, `{}`})
		if a.status != 500 || a.header["Retry-After"] != "" || !strings.Contains(a.body, `"code":"misconfigured"`) {
			t.Errorf("%s: %d %q Retry-After %q; want a 500 misconfigured, no retry", d.name, a.status, a.body, a.header["Retry-After"])
		}
	}
}

// TestEveryDoorRefusesANegativeMaxBodyBytes: an option out of range is
// ErrInvalidOptions when the door is built, on every door, never a door
// that reads no body (and so fingerprints every request alike).
func TestEveryDoorRefusesANegativeMaxBodyBytes(t *testing.T) {
	s := newFake()
	builds := map[string]func(){
		"idemlambda.HTTPAPI": func() {
			idemlambda.HTTPAPI(s, rawBody, respond[events.APIGatewayV2HTTPRequest](nil), func(o *idemlambda.Options[events.APIGatewayV2HTTPRequest]) { o.MaxBodyBytes = -1 })
		},
		"idemlambda.FunctionURL": func() {
			idemlambda.FunctionURL(s, rawBody, respond[events.LambdaFunctionURLRequest](nil), func(o *idemlambda.Options[events.LambdaFunctionURLRequest]) { o.MaxBodyBytes = -1 })
		},
		"idemlambda.RESTAPI": func() {
			idemlambda.RESTAPI(s, rawBody, respond[events.APIGatewayProxyRequest](nil), func(o *idemlambda.Options[events.APIGatewayProxyRequest]) { o.MaxBodyBytes = -1 })
		},
		"idemlambda.ALB": func() {
			idemlambda.ALB(s, rawBody, respond[events.ALBTargetGroupRequest](nil), func(o *idemlambda.Options[events.ALBTargetGroupRequest]) { o.MaxBodyBytes = -1 })
		},
		"idemhttp.Wrap": func() {
			idemhttp.Wrap(s, rawBody, func(context.Context, idemhttp.Request[http.Request, json.RawMessage], *idem.Tx) (idem.Response, error) {
				return idem.Response{}, nil
			}, func(o *idemhttp.Options[http.Request]) { o.MaxBodyBytes = -1 })
		},
	}
	for _, d := range drivers {
		if builds[d.door] == nil {
			t.Errorf("%s has no row here", d.door)
		}
	}
	for name, build := range builds {
		t.Run(name, func(t *testing.T) {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, idem.ErrInvalidOptions) {
					t.Fatalf("built with MaxBodyBytes -1: %v, want ErrInvalidOptions", err)
				}
			}()
			build()
		})
	}
}

// TestProblemBaseNamesEachCodesDocument: with Options.ProblemBase, every
// problem's type is the base and its code, with the code's own title;
// without it, "about:blank" with the status's text (checkProblem).
func TestProblemBaseNamesEachCodesDocument(t *testing.T) {
	const base = "https://example.com/errors#"
	h := idemlambda.HTTPAPI(newFake(), rawBody, respond[events.APIGatewayV2HTTPRequest](nil),
		func(o *idemlambda.Options[events.APIGatewayV2HTTPRequest]) { o.ProblemBase = base })
	r, _ := h(context.Background(), apiRequest("alice", nil, `{}`))
	var p struct{ Type, Title, Code string }
	if err := json.Unmarshal([]byte(r.Body), &p); err != nil || p.Type != base+"idempotency_key_missing" || p.Title != "Idempotency-Key missing" || p.Code != "idempotency_key_missing" {
		t.Fatalf("%d %s (%v), want type %sidempotency_key_missing", r.StatusCode, r.Body, err, base)
	}
	plain := idemlambda.HTTPAPI(newFake(), rawBody, respond[events.APIGatewayV2HTTPRequest](nil))
	r, _ = plain(context.Background(), apiRequest("alice", nil, `{}`))
	checkProblem(t, r.StatusCode, r.Headers["Content-Type"], []byte(r.Body))
	if r.StatusCode != http.StatusBadRequest {
		t.Fatalf("%d, want 400", r.StatusCode)
	}
}

// TestARefusalIsLoggedAtItsLevel: each refused request is a line of the
// door's log; a warning with its cause only for a verified identity that
// cannot be a scope, which turns every request of that caller away until
// someone fixes it. A request with no identity, or one refused for its key
// with a good identity, is an info line: the caller's mistake.
func TestARefusalIsLoggedAtItsLevel(t *testing.T) {
	cases := []struct {
		name, scope string
		header      map[string]string
		status      int
		level       string
	}{
		{"an identity that is not UTF-8", "m\xfcller", map[string]string{"idempotency-key": "k1"}, 401, "WARN"},
		{"no identity", "", map[string]string{"idempotency-key": "k1"}, 401, "INFO"},
		{"a key that is no key", "alice", map[string]string{"idempotency-key": "k\x01"}, 400, "INFO"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			h := idemlambda.HTTPAPI(newFake(), rawBody, respond[events.APIGatewayV2HTTPRequest](func(context.Context, string, string, []byte) (int, string) { return 201, "made" }),
				func(o *idemlambda.Options[events.APIGatewayV2HTTPRequest]) {
					o.Logger = slog.New(slog.NewJSONHandler(&log, nil))
				})
			r, _ := h(context.Background(), apiRequest(tc.scope, tc.header, `{}`))
			var line struct {
				Level, Msg, Cause string
				Status            int
			}
			if err := json.Unmarshal(log.Bytes(), &line); err != nil {
				t.Fatalf("log %q: %v, want one JSON line", log.String(), err)
			}
			if r.StatusCode != tc.status || line.Level != tc.level || line.Status != tc.status || (line.Cause != "") != (tc.level == "WARN") {
				t.Fatalf("%d, logged %+v; want %d logged at %s, a cause with a warning alone", r.StatusCode, line, tc.status, tc.level)
			}
		})
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
