package apigw_test

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/template"
)

// event is the payload 2.0 event of r on the one route of routes that
// takes it.
func event(t *testing.T, routes []template.Route, r *http.Request, body string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	route, params, ok := apigw.Match(routes, r.Method, r.URL.EscapedPath())
	if !ok {
		t.Fatalf("no route for %s %s", r.Method, r.URL.EscapedPath())
	}
	return apigw.Event(r, []byte(body), route, params, nil)
}

var orderRoutes = []template.Route{
	{Method: "GET", Path: "/orders/{order_id}"},
	{Method: "POST", Path: "/orders"},
	{Method: "ANY", Path: "/things/{id}"},
	{Method: "GET", Path: "/files/{path+}"},
}

// Names lowercased, a repeated header's values joined with commas, the
// query string raw and its parameters joined likewise, the route key as
// the template writes it (ANY and greedy parameters included)
// (http-api-develop-integrations-lambda.html, "Payload format differences").
func TestEventHeadersQueryAndRouteKeyAsAPIGateway(t *testing.T) {
	r := httptest.NewRequest("DELETE", "/things/t-1?a=1&a=2&b=x%20y", nil)
	r.Header.Add("X-Multi", "a")
	r.Header.Add("X-Multi", "b")
	r.Header.Set("Idempotency-Key", "k-1")
	ev := event(t, orderRoutes, r, "")
	if ev.Headers["x-multi"] != "a,b" || ev.Headers["idempotency-key"] != "k-1" || ev.Headers["X-Multi"] != "" {
		t.Errorf("headers %v", ev.Headers)
	}
	if ev.RawQueryString != "a=1&a=2&b=x%20y" || !maps.Equal(ev.QueryStringParameters, map[string]string{"a": "1,2", "b": "x y"}) {
		t.Errorf("rawQueryString %q, queryStringParameters %v", ev.RawQueryString, ev.QueryStringParameters)
	}
	if ev.RouteKey != "ANY /things/{id}" || ev.RequestContext.RouteKey != ev.RouteKey || ev.RequestContext.HTTP.Method != "DELETE" {
		t.Errorf("routeKey %q, requestContext.routeKey %q, method %q", ev.RouteKey, ev.RequestContext.RouteKey, ev.RequestContext.HTTP.Method)
	}
	greedy := event(t, orderRoutes, httptest.NewRequest("GET", "/files/a/b.txt", nil), "")
	if greedy.RouteKey != "GET /files/{path+}" || greedy.PathParameters["path"] != "a/b.txt" {
		t.Errorf("greedy: routeKey %q, pathParameters %v", greedy.RouteKey, greedy.PathParameters)
	}
}

// rawPath is the path as sent, still encoded; only the path parameters are
// decoded (http-api-develop-integrations-lambda.html: rawPath).
func TestEventRawPathStaysEncoded(t *testing.T) {
	ev := event(t, orderRoutes, httptest.NewRequest("GET", "/orders/a%20b%2Fc", nil), "")
	if ev.RawPath != "/orders/a%20b%2Fc" || ev.RequestContext.HTTP.Path != ev.RawPath {
		t.Errorf("rawPath %q, requestContext.http.path %q; want /orders/a%%20b%%2Fc", ev.RawPath, ev.RequestContext.HTTP.Path)
	}
	if ev.PathParameters["order_id"] != "a b/c" {
		t.Errorf("pathParameters %v; want order_id a b/c", ev.PathParameters)
	}
}

// The body travels as text only for text/*, JSON, XML and JavaScript media
// types; every other type, and none, is base64 with isBase64Encoded
// (http-api-develop-integrations-lambda.html: "If the content type of the
// request is binary, the body is base64-encoded"; which types are text is
// not listed there, and these are the ones HTTP APIs were seen to send as
// text).
func TestEventBodyIsTextOnlyForTextMediaTypes(t *testing.T) {
	cases := []struct {
		contentType, body string
		base64            bool
	}{
		{"application/json", `{"a":1}`, false},
		{"application/json; charset=utf-8", `{"a":1}`, false},
		{"text/plain", "hello", false},
		{"text/csv", "a,b", false},
		{"application/xml", "<a/>", false},
		{"application/javascript", "x()", false},
		{"", `{"a":1}`, true},
		{"application/x-www-form-urlencoded", "a=1&b=2", true},
		{"application/octet-stream", "bytes", true},
		{"multipart/form-data; boundary=x", "--x--", true},
		{"image/png", "\x89PNG", true},
		{"text/plain", "not utf-8 \xff", true},
		{"not a media type", "x", true},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/orders", strings.NewReader(c.body))
		if c.contentType != "" {
			r.Header.Set("Content-Type", c.contentType)
		}
		ev := event(t, orderRoutes, r, c.body)
		want := c.body
		if c.base64 {
			want = base64.StdEncoding.EncodeToString([]byte(c.body))
		}
		if ev.IsBase64Encoded != c.base64 || ev.Body != want {
			t.Errorf("Content-Type %q: body %q, isBase64Encoded %v; want %q, %v", c.contentType, ev.Body, ev.IsBase64Encoded, want, c.base64)
		}
	}
	if ev := event(t, orderRoutes, httptest.NewRequest("POST", "/orders", nil), ""); ev.Body != "" || ev.IsBase64Encoded {
		t.Errorf("no body: %q, %v", ev.Body, ev.IsBase64Encoded)
	}
}

var traceID = regexp.MustCompile(`^Root=1-[0-9a-f]{8}-[0-9a-f]{24}$`)

// API Gateway adds host, x-forwarded-for (the caller's address after any
// the caller sent), x-forwarded-proto, x-forwarded-port and
// x-amzn-trace-id to the headers it passes on
// (http-api-develop-integrations-lambda.html, the 2.0 event).
func TestEventCarriesTheHeadersAPIGatewayAdds(t *testing.T) {
	r := httptest.NewRequest("GET", "http://localhost:3000/orders/o-1", nil)
	r.RemoteAddr = "192.0.2.7:51234"
	ev := event(t, orderRoutes, r, "")
	want := map[string]string{"host": "localhost:3000", "x-forwarded-for": "192.0.2.7", "x-forwarded-proto": "http", "x-forwarded-port": "3000"}
	for k, v := range want {
		if ev.Headers[k] != v {
			t.Errorf("header %s = %q, want %q (headers %v)", k, ev.Headers[k], v, ev.Headers)
		}
	}
	if !traceID.MatchString(ev.Headers["x-amzn-trace-id"]) {
		t.Errorf("x-amzn-trace-id %q", ev.Headers["x-amzn-trace-id"])
	}
	if ev.RequestContext.HTTP.SourceIP != "192.0.2.7" {
		t.Errorf("sourceIp %q", ev.RequestContext.HTTP.SourceIP)
	}

	r = httptest.NewRequest("GET", "http://example.com/orders/o-1", nil)
	r.RemoteAddr = "[2001:db8::1]:443"
	r.Header.Set("X-Forwarded-For", "203.0.113.9")
	r.Header.Set("X-Amzn-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793")
	ev = event(t, orderRoutes, r, "")
	if ev.Headers["x-forwarded-for"] != "203.0.113.9, 2001:db8::1" || ev.Headers["x-forwarded-port"] != "80" || ev.Headers["host"] != "example.com" {
		t.Errorf("headers %v", ev.Headers)
	}
	if ev.Headers["x-amzn-trace-id"] != "Root=1-5759e988-bd862e3fe1be46a994272793" {
		t.Errorf("the caller's trace id was replaced: %q", ev.Headers["x-amzn-trace-id"])
	}
}

// Each cookie of the Cookie headers arrives in cookies as the caller sent
// it, and the Cookie header does not arrive in headers
// (http-api-develop-integrations-lambda.html: "All cookie headers in the
// request are combined with commas and added to the cookies field").
func TestEventCookiesPassAsSent(t *testing.T) {
	r := httptest.NewRequest("GET", "/orders/o-1", nil)
	r.Header.Add("Cookie", `a="b c"; d=e;  x y=1`)
	r.Header.Add("Cookie", "f=g")
	ev := event(t, orderRoutes, r, "")
	if want := []string{`a="b c"`, "d=e", "x y=1", "f=g"}; !slices.Equal(ev.Cookies, want) {
		t.Errorf("cookies %q, want %q", ev.Cookies, want)
	}
	if _, ok := ev.Headers["cookie"]; ok {
		t.Errorf("the cookie header is in headers: %v", ev.Headers)
	}
}

// requestContext.domainName is the host the caller named, without a port,
// and domainPrefix its first label
// (http-api-develop-integrations-lambda.html, the 2.0 event).
func TestEventDomainNameAndPrefix(t *testing.T) {
	for host, want := range map[string][2]string{
		"localhost:3000":       {"localhost", "localhost"},
		"api.example.com":      {"api.example.com", "api"},
		"api.example.com:8443": {"api.example.com", "api"},
		"[::1]:3000":           {"::1", "::1"},
	} {
		r := httptest.NewRequest("GET", "/orders/o-1", nil)
		r.Host = host
		ev := event(t, orderRoutes, r, "")
		if got := [2]string{ev.RequestContext.DomainName, ev.RequestContext.DomainPrefix}; got != want {
			t.Errorf("host %s: domainName, domainPrefix %q, want %q", host, got, want)
		}
	}
}

// The event files of events/ (make invoke, sam local invoke -e) carry what
// Event sends: the headers API Gateway adds, domainPrefix, and claims with
// iat and exp.
func TestEventFilesCarryWhatAPIGatewaySends(t *testing.T) {
	root, err := template.ProjectDir()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "events", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no events/*.json: %v", err)
	}
	sent := event(t, orderRoutes, httptest.NewRequest("POST", "/orders", nil), "")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.APIGatewayV2HTTPRequest
		if json.Unmarshal(raw, &ev) != nil || ev.Version != "2.0" {
			continue // not an HTTP API event
		}
		for k := range sent.Headers {
			if _, ok := ev.Headers[k]; !ok {
				t.Errorf("%s: no %s header", filepath.Base(f), k)
			}
		}
		if ev.RequestContext.DomainPrefix == "" || ev.RequestContext.Authorizer == nil {
			t.Errorf("%s: no domainPrefix or authorizer", filepath.Base(f))
			continue
		}
		for _, k := range []string{"sub", "iss", "aud", "iat", "exp"} {
			if ev.RequestContext.Authorizer.JWT.Claims[k] == "" {
				t.Errorf("%s: no %s claim", filepath.Base(f), k)
			}
		}
	}
}
