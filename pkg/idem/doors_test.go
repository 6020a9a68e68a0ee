package idem_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/pkg/idem"
)

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

// doorDriver builds a front door over s around w and sends it calls. door
// is the package's constructor it exercises, as exportedDoors names it.
type doorDriver struct {
	name string
	door string
	make func(s *idem.Store, w work) func(doorCall) answer
}

func oneHeader(m map[string][]string) map[string]string {
	out := map[string]string{}
	for k, vs := range m {
		out[k] = strings.Join(vs, ",")
	}
	return out
}

var drivers = []doorDriver{
	{"HTTP API payload 2.0", "HTTPTyped", func(s *idem.Store, w work) func(doorCall) answer {
		h := idem.HTTPTyped(s, nil, func(ctx context.Context, req idem.HTTPRequest[struct{}], tx *idem.Tx) (events.APIGatewayV2HTTPResponse, error) {
			st, b := w(ctx, req.Scope, req.Key, []byte(req.Event.Body))
			return events.APIGatewayV2HTTPResponse{StatusCode: st, Body: b, Cookies: []string{"c=1"}}, nil
		})
		return func(c doorCall) answer {
			hd := map[string]string{}
			if c.keys != nil {
				hd["idempotency-key"] = strings.Join(c.keys, ",")
			}
			r, _ := h(context.Background(), apiRequest(c.scope, hd, c.body))
			return answer{r.StatusCode, r.Headers, r.Body}
		}
	}},
	{"HTTP API payload 2.0, untyped", "Store.HTTP", func(s *idem.Store, w work) func(doorCall) answer {
		h := s.HTTP(func(ctx context.Context, req events.APIGatewayV2HTTPRequest, tx *idem.Tx) (events.APIGatewayV2HTTPResponse, error) {
			st, b := w(ctx, idem.Scope(ctx), idem.Key(ctx), []byte(req.Body))
			return events.APIGatewayV2HTTPResponse{StatusCode: st, Body: b}, nil
		})
		return func(c doorCall) answer {
			hd := map[string]string{"x-scope": "forged"}
			if c.keys != nil {
				hd["Idempotency-Key"] = strings.Join(c.keys, ",")
			}
			r, _ := h(context.Background(), apiRequest(c.scope, hd, c.body))
			return answer{r.StatusCode, r.Headers, r.Body}
		}
	}},
	{"Function URL, AWS_IAM", "FunctionURL", func(s *idem.Store, w work) func(doorCall) answer {
		h := idem.FunctionURL(s, nil, func(ctx context.Context, req idem.Req[events.LambdaFunctionURLRequest, struct{}], tx *idem.Tx) (events.LambdaFunctionURLResponse, error) {
			st, b := w(ctx, req.Scope, req.Key, []byte(req.Event.Body))
			return events.LambdaFunctionURLResponse{StatusCode: st, Body: b}, nil
		})
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
	{"Function URL, auth NONE, scope from a verified token", "FunctionURL", func(s *idem.Store, w work) func(doorCall) answer {
		verified := func(ev *events.LambdaFunctionURLRequest) string { // stands for the function's own check of a signed token
			v, _ := strings.CutPrefix(ev.Headers["authorization"], "Verified ")
			return v
		}
		h := idem.FunctionURL(s, nil, func(ctx context.Context, req idem.Req[events.LambdaFunctionURLRequest, struct{}], tx *idem.Tx) (events.LambdaFunctionURLResponse, error) {
			st, b := w(ctx, req.Scope, req.Key, []byte(req.Event.Body))
			return events.LambdaFunctionURLResponse{StatusCode: st, Body: b}, nil
		}, func(o *idem.DoorOptions[events.LambdaFunctionURLRequest]) { o.Scope = verified })
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
	{"REST API payload 1.0, Cognito claims", "RESTAPI", restDriver(nil)},
	{"REST API payload 1.0, Lambda authorizer", "RESTAPI", restDriver(idem.RESTAuthorizer("principalId"))},
	{"ALB, multi-value headers", "ALB", albDriver(true)},
	{"ALB, single-value headers", "ALB", albDriver(false)},
	{"net/http middleware on a ServeMux pattern", "Store.Middleware", func(s *idem.Store, w work) func(doorCall) answer {
		type principal struct{}
		mw := s.Middleware(func(o *idem.MiddlewareOptions) {
			o.Scope = func(r *http.Request) string { p, _ := r.Context().Value(principal{}).(string); return p }
		})
		mux := http.NewServeMux()
		mux.Handle("POST /things/{id}", mw(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if idem.TxFrom(r.Context()) == nil {
				panic("no Tx on the request's context")
			}
			b, _ := io.ReadAll(r.Body)
			st, out := w(r.Context(), idem.Scope(r.Context()), idem.Key(r.Context()), b)
			http.SetCookie(rw, &http.Cookie{Name: "c", Value: "1"})
			rw.WriteHeader(st)
			io.WriteString(rw, out)
		})))
		return func(c doorCall) answer {
			r := httptest.NewRequest("POST", "/things/t1", strings.NewReader(c.body))
			for _, k := range c.keys {
				r.Header.Add("Idempotency-Key", k)
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

func restDriver(scope func(*events.APIGatewayProxyRequest) string) func(s *idem.Store, w work) func(doorCall) answer {
	return func(s *idem.Store, w work) func(doorCall) answer {
		h := idem.RESTAPI(s, nil, func(ctx context.Context, req idem.Req[events.APIGatewayProxyRequest, struct{}], tx *idem.Tx) (events.APIGatewayProxyResponse, error) {
			st, b := w(ctx, req.Scope, req.Key, []byte(req.Event.Body))
			return events.APIGatewayProxyResponse{StatusCode: st, Body: b, MultiValueHeaders: map[string][]string{"Set-Cookie": {"a=1", "b=2"}}}, nil
		}, func(o *idem.DoorOptions[events.APIGatewayProxyRequest]) {
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

func albDriver(multi bool) func(s *idem.Store, w work) func(doorCall) answer {
	return func(s *idem.Store, w work) func(doorCall) answer {
		h := idem.ALB(s, nil, func(ctx context.Context, req idem.Req[events.ALBTargetGroupRequest, struct{}], tx *idem.Tx) (events.ALBTargetGroupResponse, error) {
			st, b := w(ctx, req.Scope, req.Key, []byte(req.Event.Body))
			return events.ALBTargetGroupResponse{StatusCode: st, Body: b}, nil
		}, func(o *idem.DoorOptions[events.ALBTargetGroupRequest]) { o.Scope = idem.ALBOIDCIdentity })
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

// items counts the records in the idempotency table.
func (f *fixture) items() int {
	f.t.Helper()
	out, err := f.raw.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(f.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		f.t.Fatal(err)
	}
	return int(out.Count)
}

// Every front door: the first call runs the handler, a retry replays it
// marked Idempotent-Replayed, a concurrent one is 409.
// TestEveryDoorRefusesBeforeWriting has the refusals (the 422 among them).
func TestEveryFrontDoor(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			f := newFixture(t, func(o *idem.Options) { o.Lease = 8 * time.Second })
			var runs atomic.Int32
			held, release := make(chan struct{}), make(chan struct{})
			call := d.make(f.store, func(ctx context.Context, scope, key string, body []byte) (int, string) {
				runs.Add(1)
				if key == "slow" {
					close(held)
					<-release
				}
				return 201, `{"scope":"` + scope + `","key":"` + key + `","body":` + string(body) + `}`
			})
			first := call(doorCall{"alice", []string{"k1"}, `{"a":1}`})
			if first.status != 201 || first.body != `{"scope":"alice","key":"k1","body":{"a":1}}` || first.header[idem.HeaderReplayed] != "" {
				t.Fatalf("first = %+v", first)
			}
			again := call(doorCall{"alice", []string{`"k1"`}, `{ "a" : 1 }`})
			if again.status != 201 || again.body != first.body || again.header[idem.HeaderReplayed] != "true" || runs.Load() != 1 {
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
