package idem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/idem"
)

// TestEveryDoorNeverStoresAFinal5xx: a handler's own final 5xx, returned
// with a nil error, is not stored on any door: it goes back as it is, the
// lease lapses, and the retry runs the handler again.
func TestEveryDoorNeverStoresAFinal5xx(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			f := newFixture(t)
			var runs atomic.Int32
			call := d.make(f.store, func(ctx context.Context, scope, key string, body []byte) (int, string) {
				runs.Add(1)
				return 503, "upstream down"
			})
			c := doorCall{"alice", []string{"k5xx"}, `{"a":1}`}
			for i := 1; i <= 2; i++ {
				a := call(c)
				if a.status != 503 || a.body != "upstream down" || a.header[idem.HeaderReplayed] != "" || runs.Load() != int32(i) {
					t.Fatalf("call %d: %d %q %v after %d runs; want the handler's 503, run again", i, a.status, a.body, a.header, runs.Load())
				}
			}
			if rec := f.record("alice", "k5xx"); str(rec, "status") != idem.StatusInProgress || num(rec, "lease_until") != "0" {
				t.Fatalf("record %v, want the key lapsed (in progress, lease_until 0)", rec)
			}
		})
	}
}

// TestMiddlewareCountsOnlyTheFinalStatus: 1xx responses are interim (RFC
// 9110 §15.2). A handler that sends 103 Early Hints and then 201 is stored
// and replayed as 201; one that sends 103 and then 503 is not stored.
func TestMiddlewareCountsOnlyTheFinalStatus(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	mw := f.store.Middleware(func(o *idem.MiddlewareOptions) { o.Scope = func(*http.Request) string { return "alice" } })
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		if r.URL.Query().Get("fail") != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("made"))
	}))
	send := func(target, key string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("POST", target, nil)
		r.Header.Set(idem.HeaderIdempotencyKey, key)
		h.ServeHTTP(rec, r)
		return rec
	}
	first, again := send("/things", "k1"), send("/things", "k1")
	if first.Code != 201 || again.Code != 201 || again.Body.String() != "made" || again.Header().Get(idem.HeaderReplayed) != "true" || runs.Load() != 1 {
		t.Fatalf("103 then 201: %d, replay %d %q %v after %d runs; want 201 stored and replayed", first.Code, again.Code, again.Body, again.Header(), runs.Load())
	}
	for i := 2; i <= 3; i++ {
		if failed := send("/things?fail=1", "k2"); failed.Code != 503 || runs.Load() != int32(i) {
			t.Fatalf("103 then 503, call %d: %d after %d runs; want the 503 unstored and the handler run again", i-1, failed.Code, runs.Load())
		}
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
		{"a TransientError without a status", &idem.TransientError{Code: "provider_down", Err: errors.New("down")}, 503, true},
		{"a TransientError with a 4xx", &idem.TransientError{StatusCode: 404, Code: "odd", Err: errors.New("odd")}, 503, true},
		{"a TransientError with its own 5xx", &idem.TransientError{StatusCode: 502, Code: "bad_gateway", Err: errors.New("502")}, 502, true},
		{"a business condition with no conflict answer", fmt.Errorf("wrapped: %w", idem.ErrWriteConditionFailed), 500, false},
		{"an unknown error of the handler", errors.New("something broke"), 503, true},
	}
	// Every door answers errors through the one mapping; the HTTP API's
	// door is the one whose handler returns them here.
	f := newFixture(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := idem.HTTPTyped(f.store, nil, func(context.Context, idem.HTTPRequest[struct{}], *idem.Tx) (events.APIGatewayV2HTTPResponse, error) {
				return events.APIGatewayV2HTTPResponse{}, tc.err
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
// no "retrying is safe": every door answers a non-retryable 500, and the
// claim's failure is logged with the table and the cause, on Do and
// DoAtomic alike.
func TestAMisconfiguredTableIsADefiniteFailure(t *testing.T) {
	for _, atomic := range []bool{false, true} {
		t.Run(fmt.Sprintf("atomic %v", atomic), func(t *testing.T) {
			var buf bytes.Buffer
			metrics := &recorder{}
			s, err := idem.New(dynamotest.Client(t), "no-such-table", func(o *idem.Options) {
				o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
				o.Metrics = metrics
			})
			if err != nil {
				t.Fatal(err)
			}
			do := s.Do
			if atomic {
				do = s.DoAtomic
			}
			_, err = do(context.Background(), req("alice", "k1", `{}`), ok)
			if !errors.Is(err, idem.ErrMisconfigured) || !strings.Contains(err.Error(), "no-such-table") {
				t.Fatalf("err %v, want ErrMisconfigured naming the table", err)
			}
			if o, _ := metrics.last(); o != idem.OutcomeFailed {
				t.Fatalf("Metrics saw %q, want %q", o, idem.OutcomeFailed)
			}
			if !strings.Contains(buf.String(), "no-such-table") || !strings.Contains(buf.String(), "ResourceNotFoundException") || strings.Contains(buf.String(), "outcome unknown") {
				t.Fatalf("log %s: want a line naming the table and the cause, never an unknown outcome", buf.String())
			}
			for _, d := range drivers {
				a := d.make(s, func(context.Context, string, string, []byte) (int, string) { return 201, "" })(doorCall{"alice", []string{"k1"}, `{}`})
				if a.status != 500 || a.header["Retry-After"] != "" || !strings.Contains(a.body, `"code":"misconfigured"`) {
					t.Errorf("%s: %d %q Retry-After %q; want a 500 misconfigured, no retry", d.name, a.status, a.body, a.header["Retry-After"])
				}
			}
		})
	}
}

// TestEveryDoorRefusesANegativeMaxBodyBytes: an option out of range is
// ErrInvalidOptions when the door is built, on every door, never a door
// that reads no body (and so fingerprints every request alike).
func TestEveryDoorRefusesANegativeMaxBodyBytes(t *testing.T) {
	f := newFixture(t)
	noop := func(context.Context, idem.Req[events.APIGatewayProxyRequest, struct{}], *idem.Tx) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{}, nil
	}
	builds := map[string]func(){
		"HTTPTyped": func() {
			idem.HTTPTyped(f.store, nil, func(context.Context, idem.HTTPRequest[struct{}], *idem.Tx) (events.APIGatewayV2HTTPResponse, error) {
				return events.APIGatewayV2HTTPResponse{}, nil
			}, func(o *idem.HTTPOptions) { o.MaxBodyBytes = -1 })
		},
		"Store.HTTP": func() {
			f.store.HTTP(func(context.Context, events.APIGatewayV2HTTPRequest, *idem.Tx) (events.APIGatewayV2HTTPResponse, error) {
				return events.APIGatewayV2HTTPResponse{}, nil
			}, func(o *idem.HTTPOptions) { o.MaxBodyBytes = -1 })
		},
		"FunctionURL": func() {
			idem.FunctionURL(f.store, nil, func(context.Context, idem.Req[events.LambdaFunctionURLRequest, struct{}], *idem.Tx) (events.LambdaFunctionURLResponse, error) {
				return events.LambdaFunctionURLResponse{}, nil
			}, func(o *idem.DoorOptions[events.LambdaFunctionURLRequest]) { o.MaxBodyBytes = -1 })
		},
		"RESTAPI": func() {
			idem.RESTAPI(f.store, nil, noop, func(o *idem.DoorOptions[events.APIGatewayProxyRequest]) { o.MaxBodyBytes = -1 })
		},
		"ALB": func() {
			idem.ALB(f.store, nil, func(context.Context, idem.Req[events.ALBTargetGroupRequest, struct{}], *idem.Tx) (events.ALBTargetGroupResponse, error) {
				return events.ALBTargetGroupResponse{}, nil
			}, func(o *idem.DoorOptions[events.ALBTargetGroupRequest]) { o.MaxBodyBytes = -1 })
		},
		"Store.Middleware": func() {
			f.store.Middleware(func(o *idem.MiddlewareOptions) { o.MaxBodyBytes = -1 })
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

// TestFunctionURLScopesAnAssumedRoleByItsRole: the same role in two STS
// sessions is one scope (a key kept across sessions replays), another role
// or an IAM user is another; the session's ARN stays in the event.
func TestFunctionURLScopesAnAssumedRoleByItsRole(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	var arns []string
	h := idem.FunctionURL(f.store, nil, func(ctx context.Context, req idem.Req[events.LambdaFunctionURLRequest, struct{}], tx *idem.Tx) (events.LambdaFunctionURLResponse, error) {
		runs.Add(1)
		arns = append(arns, req.Event.RequestContext.Authorizer.IAM.UserARN)
		return events.LambdaFunctionURLResponse{StatusCode: 201, Body: req.Scope}, nil
	})
	send := func(arn string) events.LambdaFunctionURLResponse {
		ev := events.LambdaFunctionURLRequest{RawPath: "/jobs", Headers: map[string]string{"idempotency-key": "job-1"}, Body: `{}`}
		ev.RequestContext.HTTP.Method = "POST"
		ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: arn}}
		r, _ := h(context.Background(), ev)
		return r
	}
	first := send("arn:aws:sts::123456789012:assumed-role/batch/session-monday")
	again := send("arn:aws:sts::123456789012:assumed-role/batch/session-tuesday")
	if first.Body != "arn:aws:sts::123456789012:assumed-role/batch" || again.Headers[idem.HeaderReplayed] != "true" || runs.Load() != 1 {
		t.Fatalf("two sessions of one role: %q, then %v after %d runs; want one scope, the role, and a replay", first.Body, again.Headers, runs.Load())
	}
	if arns[0] != "arn:aws:sts::123456789012:assumed-role/batch/session-monday" {
		t.Fatalf("the handler saw %q, want the session's own ARN", arns[0])
	}
	for _, other := range []string{"arn:aws:sts::123456789012:assumed-role/reports/session-monday", "arn:aws:iam::123456789012:user/alice", "arn:aws:sts::999999999999:assumed-role/batch/session-monday"} {
		if r := send(other); r.Headers[idem.HeaderReplayed] != "" {
			t.Errorf("%s: replayed another principal's answer", other)
		}
	}
	if runs.Load() != 4 {
		t.Fatalf("%d runs, want one per principal", runs.Load())
	}
}

// TestFunctionURLIAMPrincipalKeepsPrincipalsApart: the role is the scope
// only for an STS assumed-role ARN, parsed field by field; distinct
// principals never share a scope (IAM paths may hold ':'; an Identity Center
// session is a person).
func TestFunctionURLIAMPrincipalKeepsPrincipalsApart(t *testing.T) {
	scope := func(arn string) string {
		ev := events.LambdaFunctionURLRequest{}
		ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: arn}}
		return idem.FunctionURLIAMPrincipal(&ev)
	}
	for _, arn := range []string{
		"arn:aws:iam::123456789012:user/:assumed-role/ops/alice",
		"arn:aws:iam::123456789012:user/:assumed-role/ops/bob",
		"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/alice@example.com",
		"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/bob@example.com",
		"arn:aws:sts::123456789012:federated-user/bob",
		"arn:aws:sts::123456789012:assumed-role/r",
		"garbage:assumed-role/x/y",
	} {
		if got := scope(arn); got != arn {
			t.Errorf("%s: scope %q, want the ARN itself", arn, got)
		}
	}
	for arn, role := range map[string]string{
		"arn:aws-us-gov:sts::123456789012:assumed-role/r/s": "arn:aws-us-gov:sts::123456789012:assumed-role/r",
		"arn:aws-cn:sts::123456789012:assumed-role/r/s":     "arn:aws-cn:sts::123456789012:assumed-role/r",
	} {
		if got := scope(arn); got != role {
			t.Errorf("%s: scope %q, want %q", arn, got, role)
		}
	}
}
