package door_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/door"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// The tests here walk every front door of pkg/idem (the idemlambda doors
// and idemhttp.Wrap) through one table of drivers, on DynamoDB Local and
// on a fake Doer.

func TestMain(m *testing.M) { os.Exit(idemtest.Main(m)) }

// fake is a Doer in memory: the protocol's answers (a replay, 409 while
// running, 422 for another request, a lapse on failure) without DynamoDB,
// so that the doors' tables and fuzzers run without an engine. It counts
// the calls that reach it.
type fake struct {
	mu    sync.Mutex
	recs  map[string]*fakeRecord
	calls atomic.Int32
}

type fakeRecord struct {
	fp      string
	resp    *idem.Response // nil while in progress or lapsed
	running bool
}

func newFake() *fake { return &fake{recs: map[string]*fakeRecord{}} }

func (f *fake) Do(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error) {
	f.calls.Add(1)
	if req.Scope == "" || len(req.Scope) > idem.MaxScopeLength {
		return idem.Result{}, idem.ErrInvalidScope
	}
	if err := idem.ValidateKey(req.Key); err != nil {
		return idem.Result{}, err
	}
	if req.Fingerprint == "" {
		return idem.Result{}, idem.ErrInvalidBody // as the Store refuses it
	}
	k := req.Scope + "\x00" + req.Key
	f.mu.Lock()
	r := f.recs[k]
	switch {
	case r != nil && r.fp != req.Fingerprint:
		f.mu.Unlock()
		return idem.Result{}, idem.ErrFingerprintMismatch
	case r != nil && r.resp != nil:
		f.mu.Unlock()
		return idem.Result{Response: *r.resp, Replayed: true}, nil
	case r != nil && r.running:
		f.mu.Unlock()
		return idem.Result{}, &idem.InProgressError{RetryAfter: 8 * time.Second}
	}
	r = &fakeRecord{fp: req.Fingerprint, running: true}
	f.recs[k] = r
	f.mu.Unlock()
	var tx idem.Tx
	resp, err := work(ctx, &tx)
	f.mu.Lock()
	defer f.mu.Unlock()
	r.running = false // a failure lapses: the same request takes over
	if err != nil {
		return idem.Result{}, err
	}
	r.resp = &resp
	return idem.Result{Response: resp}, nil
}

// Commit is the keyless path (idemlambda.Function's PassThrough): the fake
// keeps no business items, so there is nothing to write.
func (f *fake) Commit(context.Context, *idem.Tx) (*idem.Response, error) { return nil, nil }

func (f *fake) DoAtomic(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error) {
	return f.Do(ctx, req, work)
}

var apiRequest = testbed.APIRequest

// doorCall is one request as a test sends it to any front door: "" scope
// sends no verified identity, nil keys no Idempotency-Key.
type doorCall struct {
	scope string
	keys  []string
	body  string
}

type answer struct {
	status int
	header map[string]string
	body   string
}

// work is a front door's handler reduced to what the tests need.
type work func(ctx context.Context, scope, key string, body []byte) (int, string)

// respond is a handler of the one shape every HTTP door takes, around w.
func respond[E any](w work) idemlambda.Handler[E, json.RawMessage] {
	return func(ctx context.Context, req idemlambda.Request[E, json.RawMessage], tx *idem.Tx) (idem.Response, error) {
		st, b := w(ctx, req.Scope, req.Key, req.Body)
		return idem.Response{StatusCode: st, Body: []byte(b), Cookies: []string{"c=1"}}, nil
	}
}

// rawBody is a Parse that keeps the body's bytes.
func rawBody(b []byte) (json.RawMessage, error) { return json.RawMessage(b), nil }

// doorDriver builds a front door over s around w and sends it calls. door
// is the constructor it exercises, as exportedDoors names it.
type doorDriver struct {
	name string
	door string
	make func(s idemlambda.Doer, w work) func(doorCall) answer
}

func oneHeader(m map[string][]string) map[string]string {
	out := map[string]string{}
	for k, vs := range m {
		out[k] = strings.Join(vs, ",")
	}
	return out
}

var drivers = []doorDriver{
	{"HTTP API payload 2.0", "idemlambda.HTTPAPI", func(s idemlambda.Doer, w work) func(doorCall) answer {
		h := idemlambda.HTTPAPI(s, rawBody, respond[events.APIGatewayV2HTTPRequest](w))
		return func(c doorCall) answer {
			hd := map[string]string{"x-scope": "forged"}
			if c.keys != nil {
				hd["idempotency-key"] = strings.Join(c.keys, ",")
			}
			r, _ := h(context.Background(), apiRequest(c.scope, hd, c.body))
			return answer{r.StatusCode, r.Headers, r.Body}
		}
	}},
	{"Function URL, AWS_IAM", "idemlambda.FunctionURL", func(s idemlambda.Doer, w work) func(doorCall) answer {
		h := idemlambda.FunctionURL(s, rawBody, respond[events.LambdaFunctionURLRequest](w))
		return func(c doorCall) answer {
			ev := events.LambdaFunctionURLRequest{RawPath: "/things", Headers: map[string]string{"x-scope": "forged"}, Body: c.body}
			ev.RequestContext.HTTP.Method = "POST"
			if c.keys != nil {
				ev.Headers["idempotency-key"] = strings.Join(c.keys, ",")
			}
			if c.scope != "" {
				ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: c.scope}}
			}
			r, _ := h(context.Background(), ev)
			return answer{r.StatusCode, r.Headers, r.Body}
		}
	}},
	{"Function URL, auth NONE, scope from a verified token", "idemlambda.FunctionURL", func(s idemlambda.Doer, w work) func(doorCall) answer {
		verified := func(ev *events.LambdaFunctionURLRequest) string { // stands for the function's own check of a signed token
			v, _ := strings.CutPrefix(ev.Headers["authorization"], "Verified ")
			return v
		}
		h := idemlambda.FunctionURL(s, rawBody, respond[events.LambdaFunctionURLRequest](w),
			func(o *idemlambda.Options[events.LambdaFunctionURLRequest]) { o.Scope = verified })
		return func(c doorCall) answer {
			ev := events.LambdaFunctionURLRequest{RawPath: "/things", Headers: map[string]string{}, Body: c.body}
			ev.RequestContext.HTTP.Method = "POST"
			if c.keys != nil {
				ev.Headers["idempotency-key"] = strings.Join(c.keys, ",")
			}
			if c.scope != "" {
				ev.Headers["authorization"] = "Verified " + c.scope
			}
			r, _ := h(context.Background(), ev)
			return answer{r.StatusCode, r.Headers, r.Body}
		}
	}},
	{"REST API payload 1.0, Cognito claims", "idemlambda.RESTAPI", restDriver(nil)},
	{"REST API payload 1.0, Lambda authorizer", "idemlambda.RESTAPI", restDriver(idemlambda.RESTAuthorizer("principalId"))},
	{"ALB, multi-value headers", "idemlambda.ALB", albDriver(true)},
	{"ALB, single-value headers", "idemlambda.ALB", albDriver(false)},
	{"net/http on a ServeMux pattern", "idemhttp.Wrap", func(s idemlambda.Doer, w work) func(doorCall) answer {
		type principal struct{}
		h := idemhttp.Wrap(s, rawBody, func(ctx context.Context, req idemhttp.Request[http.Request, json.RawMessage], tx *idem.Tx) (idem.Response, error) {
			st, b := w(ctx, req.Scope, req.Key, req.Body)
			return idem.Response{StatusCode: st, Body: []byte(b), Cookies: []string{"c=1"}}, nil
		}, func(o *idemhttp.Options[http.Request]) {
			o.Scope = func(r *http.Request) string { p, _ := r.Context().Value(principal{}).(string); return p }
		})
		mux := http.NewServeMux()
		mux.Handle("POST /things/{id}", h)
		return func(c doorCall) answer {
			r := httptest.NewRequest("POST", "/things/t1", strings.NewReader(c.body))
			for _, k := range c.keys {
				r.Header.Add(idemhttp.HeaderIdempotencyKey, k)
			}
			r.Header.Set("X-Scope", "forged")
			if c.scope != "" { // an authentication middleware in front verified it
				r = r.WithContext(context.WithValue(r.Context(), principal{}, c.scope))
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, r)
			return answer{rec.Code, oneHeader(rec.Header()), rec.Body.String()}
		}
	}},
}

func restDriver(scope func(*events.APIGatewayProxyRequest) string) func(s idemlambda.Doer, w work) func(doorCall) answer {
	return func(s idemlambda.Doer, w work) func(doorCall) answer {
		h := idemlambda.RESTAPI(s, rawBody, respond[events.APIGatewayProxyRequest](w), func(o *idemlambda.Options[events.APIGatewayProxyRequest]) {
			if scope != nil {
				o.Scope = scope
			}
		})
		return func(c doorCall) answer {
			ev := events.APIGatewayProxyRequest{Resource: "/things/{id}", Path: "/prod/things/t1", HTTPMethod: "POST", PathParameters: map[string]string{"id": "t1"},
				Headers: map[string]string{"X-Scope": "forged"}, MultiValueHeaders: map[string][]string{}, Body: c.body}
			if c.keys != nil {
				ev.Headers["Idempotency-Key"] = c.keys[len(c.keys)-1]
				ev.MultiValueHeaders["Idempotency-Key"] = c.keys
			}
			if c.scope != "" {
				ev.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": c.scope}}
				if scope != nil {
					ev.RequestContext.Authorizer = map[string]any{"principalId": c.scope}
				}
			}
			r, _ := h(context.Background(), ev)
			return answer{r.StatusCode, r.Headers, r.Body}
		}
	}
}

func albDriver(multi bool) func(s idemlambda.Doer, w work) func(doorCall) answer {
	return func(s idemlambda.Doer, w work) func(doorCall) answer {
		h := idemlambda.ALB(s, rawBody, respond[events.ALBTargetGroupRequest](w),
			func(o *idemlambda.Options[events.ALBTargetGroupRequest]) { o.Scope = idemlambda.ALBOIDCIdentity })
		return func(c doorCall) answer {
			ev := events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/things/t1", Body: c.body}
			hd := map[string][]string{}
			if c.keys != nil {
				hd["idempotency-key"] = c.keys
			}
			if c.scope != "" {
				hd["x-amzn-oidc-identity"] = []string{c.scope}
			}
			if multi {
				ev.MultiValueHeaders = hd
			} else {
				ev.Headers = oneHeader(hd)
			}
			r, _ := h(context.Background(), ev)
			out := answer{r.StatusCode, r.Headers, r.Body}
			if multi {
				out.header = oneHeader(r.MultiValueHeaders)
			}
			return out
		}
	}
}

// checkProblem fails t unless an answer is RFC 9457 problem details with
// every member: its type "about:blank" (no ProblemBase), the status's text
// as its title, a stable code.
func checkProblem(t *testing.T, status int, contentType string, body []byte) {
	t.Helper()
	var p struct {
		Type, Title, Detail, Code string
		Status                    int
	}
	if contentType != door.ContentType || json.Unmarshal(body, &p) != nil {
		t.Fatalf("answer %d is not problem details: %s %q", status, contentType, body)
	}
	if p.Code == "" || p.Type != "about:blank" || p.Title != http.StatusText(status) || p.Status != status || p.Detail == "" {
		t.Fatalf("answer %d lacks a problem member: %q", status, body)
	}
}

// newFixture is a Store on DynamoDB Local for one test.
func newFixture(t *testing.T, optFns ...func(*idem.Options)) *testbed.Fixture {
	return testbed.New(t, optFns...)
}
