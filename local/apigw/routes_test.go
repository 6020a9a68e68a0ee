package apigw_test

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/template"
)

// matchCase is a request and the route that should take it (event "" for
// none), with its path parameters.
type matchCase struct {
	method, path, event string
	params              map[string]string
}

func checkMatches(t *testing.T, routes []template.Route, cases []matchCase) {
	t.Helper()
	for _, c := range cases {
		route, params, ok := apigw.Match(routes, c.method, c.path)
		if ok != (c.event != "") || route.Event != c.event || !maps.Equal(params, c.params) {
			t.Errorf("%s %s: %v %v %v, want %q %v", c.method, c.path, route, params, ok, c.event, c.params)
		}
	}
}

func TestMatchRoutesAsAPIGateway(t *testing.T) {
	routes := []template.Route{
		{Event: "Create", Method: "POST", Path: "/orders"},
		{Event: "Get", Method: "GET", Path: "/orders/{order_id}"},
		{Event: "Stats", Method: "GET", Path: "/orders/stats"},
		{Event: "Put", Method: "PUT", Path: "/orders/{order_id}"},
		{Event: "Any", Method: "ANY", Path: "/things/{id}"},
		{Event: "Files", Method: "GET", Path: "/files/{path+}"},
	}
	cases := []matchCase{
		{"POST", "/orders", "Create", nil},
		{"POST", "/orders/", "Create", nil}, // a trailing slash does not count
		{"GET", "/orders/o-1", "Get", map[string]string{"order_id": "o-1"}},
		{"GET", "/orders/o-1/", "Get", map[string]string{"order_id": "o-1"}},
		{"GET", "/orders/stats", "Stats", nil}, // a literal beats a parameter
		{"PUT", "/orders/o-1", "Put", map[string]string{"order_id": "o-1"}},
		{"DELETE", "/things/t-1", "Any", map[string]string{"id": "t-1"}},
		{"GET", "/files/a/b.txt", "Files", map[string]string{"path": "a/b.txt"}},
		{"GET", "/orders", "", nil},       // no GET route there
		{"HEAD", "/orders/o-1", "", nil},  // a GET route does not take HEAD
		{"GET", "/orders/o-1/x", "", nil}, // more segments
		{"GET", "/nothing", "", nil},
		{"GET", "/orders/", "", nil}, // a parameter takes no empty segment
	}
	checkMatches(t, routes, cases)
}

func TestServerAnswersAnUnknownRouteAsAPIGateway(t *testing.T) {
	srv, err := apigw.New("/nonexistent-emulator", []apigw.Function{{Def: &template.Function{LogicalID: "F", Routes: []template.Route{{Method: "POST", Path: "/charges"}}}}}, &apigw.Authorizer{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*http.Request{httptest.NewRequest("GET", "/charges", nil), httptest.NewRequest("POST", "/refunds", nil)} {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusNotFound || w.Body.String() != `{"message":"Not Found"}` {
			t.Errorf("%s %s: %d %s, want API Gateway's 404", r.Method, r.URL.Path, w.Code, w.Body)
		}
	}
}

// The routes API Gateway accepts and ServeMux's own method and prefix rules
// would get wrong: a catch-all beside other routes, the root, a template
// path with a trailing slash, HEAD where a GET and an ANY route share a
// path, a method-less route beside a method one, names that are not Go
// identifiers. Routes that cannot be ordered are an error, not a panic.
func TestRoutesServeMuxAloneWouldGetWrong(t *testing.T) {
	routes := []template.Route{
		{Event: "Root", Method: "GET", Path: "/"},
		{Event: "Proxy", Method: "ANY", Path: "/{proxy+}"},
		{Event: "List", Method: "GET", Path: "/orders/"},
		{Event: "Get", Method: "GET", Path: "/o/{order-id}"},
		{Event: "AnyO", Method: "ANY", Path: "/o/{order-id}"},
		{Event: "Stats", Method: "ANY", Path: "/o/stats"},
	}
	cases := []matchCase{
		{"GET", "/", "Root", nil},
		{"GET", "/nothing/at/all", "Proxy", map[string]string{"proxy": "nothing/at/all"}},
		{"POST", "/", "", nil}, // the catch-all takes no empty path
		{"GET", "/orders", "List", nil},
		{"GET", "/orders/", "List", nil},
		{"GET", "/o/1", "Get", map[string]string{"order-id": "1"}},
		{"HEAD", "/o/1", "AnyO", map[string]string{"order-id": "1"}},
		{"GET", "/o/stats", "Stats", nil},
		{"GET", "//orders", "", nil}, // not a clean path
		{"GET", "/o/../orders", "", nil},
	}
	checkMatches(t, routes, cases)
	fns := []apigw.Function{{Def: &template.Function{LogicalID: "F", Routes: []template.Route{{Method: "GET", Path: "/a/{x}"}, {Method: "GET", Path: "/{y}/b"}}}}}
	if _, err := apigw.New("/nonexistent-emulator", fns, &apigw.Authorizer{}, 1, nil); err == nil {
		t.Error("routes ServeMux cannot order (/a/{x}, /{y}/b): no error")
	}
}
