package idemlambda_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

func TestHTTPAPI(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	handler := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req apiReq, tx *idem.Tx) (idem.Response, error) {
		runs.Add(1)
		return idem.Response{
			StatusCode: 201,
			Header:     map[string]string{"Content-Type": "application/json", "Date": "Wed, 02 Dec 2026", "Set-Cookie": "s=1", "X-Thing": "kept"},
			Cookies:    []string{"a=1; Path=/", "b=2; HttpOnly"},
			Body:       []byte(`{"scope":"` + req.Scope + `","key":"` + req.Key + `","body":` + req.Event.Body + `}`),
		}, nil
	})
	ctx := context.Background()
	first, _ := handler(ctx, apiRequest("alice", map[string]string{"idempotency-key": "k1"}, `{"a":1}`))
	if first.StatusCode != 201 || first.Body != `{"scope":"alice","key":"k1","body":{"a":1}}` {
		t.Fatalf("first = %d %s", first.StatusCode, first.Body)
	}
	// Mixed-case header name, quoted key, other white space: the same request.
	again, _ := handler(ctx, apiRequest("alice", map[string]string{"Idempotency-KEY": `"k1"`}, `{ "a" : 1 }`))
	if runs.Load() != 1 || again.Body != first.Body || again.Headers[idemlambda.HeaderReplayed] != "true" {
		t.Fatalf("replay = %d %v %s after %d runs", again.StatusCode, again.Headers, again.Body, runs.Load())
	}
	if again.Headers["X-Thing"] != "kept" || again.Headers["Content-Type"] != "application/json" {
		t.Fatalf("replay lost a result header: %v", again.Headers)
	}
	if _, ok := again.Headers["Date"]; ok {
		t.Fatalf("replay repeated a per-transmission header: %v", again.Headers)
	}
	// Cookies go with the first answer only: never stored, never replayed.
	if !slices.Equal(first.Cookies, []string{"a=1; Path=/", "b=2; HttpOnly"}) || first.Headers["Set-Cookie"] != "s=1" {
		t.Fatalf("first answer dropped cookies: %v %v", first.Cookies, first.Headers)
	}
	if _, ok := again.Headers["Set-Cookie"]; ok || len(again.Cookies) > 0 {
		t.Fatalf("replay sent cookies: %v %v", again.Cookies, again.Headers)
	}

	cases := []struct {
		name   string
		req    events.APIGatewayV2HTTPRequest
		status int
		code   string
	}{
		{"no identity", apiRequest("", map[string]string{"idempotency-key": "k1"}, `{}`), 401, "unauthenticated"},
		{"forged scope header", apiRequest("", map[string]string{"idempotency-key": "k1", "x-scope": "alice"}, `{}`), 401, "unauthenticated"},
		{"no key", apiRequest("alice", nil, `{}`), 400, "idempotency_key_missing"},
		{"empty key", apiRequest("alice", map[string]string{"idempotency-key": ""}, `{}`), 400, "idempotency_key_invalid"},
		{"key with #", apiRequest("alice", map[string]string{"idempotency-key": "a#b"}, `{"a":2}`), 201, ""},
		{"reused key", apiRequest("alice", map[string]string{"idempotency-key": "k1"}, `{"a":2}`), 422, "idempotency_key_reused"},
		{"bad JSON", apiRequest("alice", map[string]string{"idempotency-key": "k2"}, `{"a":`), 400, "invalid_json"},
		{"duplicate JSON key", apiRequest("alice", map[string]string{"idempotency-key": "k2"}, `{"a":1,"a":2}`), 400, "invalid_json"},
		{"body too large", apiRequest("alice", map[string]string{"idempotency-key": "k2"}, `"`+strings.Repeat("x", 70<<10)+`"`), 413, "body_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := handler(ctx, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || (tc.code != "" && !strings.Contains(resp.Body, `"code":"`+tc.code+`"`)) {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, resp.Body, tc.status, tc.code)
			}
		})
	}
}

func TestHTTPAPIConflictsAndFailures(t *testing.T) {
	f := newFixture(t, func(o *idem.Options) { o.Lease = 8 * time.Second })
	ctx := context.Background()
	held, release := make(chan struct{}), make(chan struct{})
	slow := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req apiReq, tx *idem.Tx) (idem.Response, error) {
		close(held)
		<-release
		return idem.Response{StatusCode: 200}, nil
	})
	done := make(chan struct{})
	go func() {
		_, _ = slow(ctx, apiRequest("alice", map[string]string{"idempotency-key": "k1"}, `{}`)) // the holder's own answer is not what this test checks
		close(done)
	}()
	<-held
	busy, _ := slow(ctx, apiRequest("alice", map[string]string{"idempotency-key": "k1"}, `{}`))
	if busy.StatusCode != http.StatusConflict || busy.Headers["Retry-After"] != "8" {
		t.Fatalf("concurrent = %d %v, want 409 with Retry-After: 8", busy.StatusCode, busy.Headers)
	}
	close(release)
	<-done

	var attempts atomic.Int32
	flaky := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req apiReq, tx *idem.Tx) (idem.Response, error) {
		if attempts.Add(1) == 1 {
			return idem.Response{}, &idemlambda.TransientError{StatusCode: 502, RetryAfter: 1500 * time.Millisecond, Code: "upstream_down", Err: errors.New("connection refused")}
		}
		return idem.Response{StatusCode: 200, Body: []byte("ok")}, nil
	})
	failed, _ := flaky(ctx, apiRequest("alice", map[string]string{"idempotency-key": "k2"}, `{}`))
	if failed.StatusCode != 502 || failed.Headers["Retry-After"] != "2" || !strings.Contains(failed.Body, "upstream_down") {
		t.Fatalf("transient = %d %v %s", failed.StatusCode, failed.Headers, failed.Body)
	}
	retried, _ := flaky(ctx, apiRequest("alice", map[string]string{"idempotency-key": "k2"}, `{}`))
	if retried.StatusCode != 200 || retried.Headers[idemlambda.HeaderReplayed] != "" {
		t.Fatalf("retry after a transient failure = %d %v, want the work run again", retried.StatusCode, retried.Headers)
	}
}

// A body that is not UTF-8 comes in as base64, reaches the handler decoded,
// and goes back (first and replayed) as base64.
func TestHTTPAPIKeepsBinaryBodies(t *testing.T) {
	f := newFixture(t)
	png := []byte{0x89, 'P', 'N', 'G', 0xff, 0x00}
	h := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req apiReq, tx *idem.Tx) (idem.Response, error) {
		if req.Event.Body != string(png) || req.Event.IsBase64Encoded {
			t.Errorf("handler got body %q base64=%v, want the decoded bytes", req.Event.Body, req.Event.IsBase64Encoded)
		}
		return idem.Response{StatusCode: 200, Header: map[string]string{"Content-Type": "image/png"}, Body: png}, nil
	})
	req := apiRequest("alice", map[string]string{"idempotency-key": "k1", "content-type": "image/png"}, base64Std(png))
	req.IsBase64Encoded = true
	for i := range 2 {
		resp, _ := h(context.Background(), req)
		if !resp.IsBase64Encoded || resp.Body != base64Std(png) {
			t.Fatalf("answer %d = %q base64=%v, want the same bytes", i, resp.Body, resp.IsBase64Encoded)
		}
	}
}

func TestHTTPAPIScopeFromAnotherClaim(t *testing.T) {
	f := newFixture(t)
	h := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req apiReq, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 200, Body: []byte(req.Scope)}, nil
	}, func(o *idemlambda.Options[events.APIGatewayV2HTTPRequest]) { o.Scope = idemlambda.JWTClaim("tenant") })
	resp, _ := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": "k"}, `{}`))
	if resp.Body != "t-alice" {
		t.Fatalf("scope = %q, want the tenant claim", resp.Body)
	}
}

// The HTTP conventions of DESIGN.md: an empty body is a body, the query
// string is part of the request, the fingerprint follows the matched route
// (not the raw path), and a repeated key header is a 400.
func TestHTTPAPIConventions(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	handler := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req apiReq, tx *idem.Tx) (idem.Response, error) {
		runs.Add(1)
		return idem.Response{StatusCode: 200, Body: fmt.Appendf(nil, `{"run":%d,"query":%q}`, runs.Load(), req.Event.RawQueryString)}, nil
	})
	ctx := context.Background()
	call := func(key, path, query, body string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		r := apiRequest("alice", map[string]string{"idempotency-key": key}, body)
		r.RouteKey, r.RawPath, r.RawQueryString = "POST /things/{id}/capture", path, query
		r.PathParameters = map[string]string{"id": "t1"}
		resp, err := handler(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	// A bodiless action endpoint (capture), no Content-Type: a valid request.
	first := call("cap-1", "/things/t1/capture", "", "")
	if first.StatusCode != 200 || runs.Load() != 1 {
		t.Fatalf("bodiless POST = %d %s, want the handler's 200", first.StatusCode, first.Body)
	}
	// The same route reached by another raw path (a trailing slash, an API
	// mapping's prefix) is the same request: a replay, not a 422.
	for _, path := range []string{"/things/t1/capture/", "/v1/things/t1/capture"} {
		again := call("cap-1", path, "", "")
		if again.StatusCode != 200 || again.Headers[idemlambda.HeaderReplayed] != "true" || again.Body != first.Body {
			t.Fatalf("via %s: %d %v %s, want the replay", path, again.StatusCode, again.Headers, again.Body)
		}
	}
	// The query string is part of the request.
	call("q-1", "/things/t1/capture", "amount=100", "")
	if other := call("q-1", "/things/t1/capture", "amount=999", ""); other.StatusCode != 422 {
		t.Fatalf("another query under the key = %d %s, want 422", other.StatusCode, other.Body)
	}
	// A repeated Idempotency-Key header arrives comma-joined.
	if several := call("k-a,k-b", "/things/t1/capture", "", ""); several.StatusCode != 400 || !strings.Contains(several.Body, "idempotency_key_invalid") {
		t.Fatalf("several keys = %d %s, want 400", several.StatusCode, several.Body)
	}
	if runs.Load() != 2 {
		t.Fatalf("the handler ran %d times, want 2 (cap-1 and q-1)", runs.Load())
	}
}

// TestAnEmptyListOfValuesIsNoHeader: a REST API event carries its headers
// twice, one value each and every value; a header's empty list of values
// says nothing, and its value is read from the other form. The request is
// served under the key it carries, once, and replayed.
func TestAnEmptyListOfValuesIsNoHeader(t *testing.T) {
	f := newFixture(t)
	runs := 0
	h := idemlambda.RESTAPI(f.Store, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayProxyRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
		runs++
		return idem.Response{StatusCode: 201, Body: []byte(`{}`)}, nil
	})
	for i := range 2 {
		ev := testbed.RESTRequest("alice", map[string]string{"Idempotency-Key": "k1"}, `{}`)
		ev.MultiValueHeaders = map[string][]string{"idempotency-key": {}}
		out, err := h(context.Background(), ev)
		if err != nil || out.StatusCode != 201 || (out.Headers[idemlambda.HeaderReplayed] == "true") != (i == 1) || runs != 1 {
			t.Fatalf("call %d: %d %v %q, %v after %d runs; want 201, run once, then replayed", i+1, out.StatusCode, out.Headers, out.Body, err, runs)
		}
	}
}
