package apigw

import (
	"net/http"
	"strings"

	"github.com/idemkeys/idem/local/template"
)

// routeHandler serves a request that route takes, with its path parameters
// (nil when it has none).
type routeHandler func(w http.ResponseWriter, r *http.Request, route template.Route, params map[string]string)

// Pattern is route's net/http ServeMux pattern: "POST /orders/{order_id}".
// An ANY route takes every method; a greedy "{proxy+}" is "{proxy...}".
func Pattern(route template.Route) string {
	path := route.Path
	for _, name := range wildcards(path) {
		if base, greedy := strings.CutSuffix(name, "+"); greedy {
			path = strings.Replace(path, "{"+name+"}", "{"+base+"...}", 1)
		}
	}
	if route.Method == "ANY" {
		return path
	}
	return route.Method + " " + path
}

// wildcards are the names between braces in path, as written.
func wildcards(path string) []string {
	var names []string
	for _, seg := range strings.Split(path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			if name, ok := strings.CutSuffix(name, "}"); ok {
				names = append(names, name)
			}
		}
	}
	return names
}

// newMux registers routes on a ServeMux, each under its Pattern and, as
// API Gateway ignores a trailing slash, under that pattern with one; h gets
// the route and its path parameters, read with r.PathValue. A request no
// route takes, or that a GET route takes for a HEAD, gets API Gateway's
// 404. Routes that ServeMux finds ambiguous make it panic.
func newMux(routes []template.Route, h routeHandler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/", notFound)
	for _, route := range routes {
		serve := func(w http.ResponseWriter, r *http.Request) {
			if route.Method != "ANY" && r.Method != route.Method {
				notFound(w, r)
				return
			}
			h(w, r, route, pathParams(r, route))
		}
		p := Pattern(route)
		mux.HandleFunc(p, serve)
		if !strings.HasSuffix(p, "/") && !strings.HasSuffix(p, "...}") {
			mux.HandleFunc(p+"/{$}", serve)
		}
	}
	return mux
}

// pathParams are route's path parameters in r, nil when it has none.
func pathParams(r *http.Request, route template.Route) map[string]string {
	names := wildcards(route.Path)
	if len(names) == 0 {
		return nil
	}
	params := make(map[string]string, len(names))
	for _, name := range names {
		name = strings.TrimSuffix(name, "+")
		params[name] = r.PathValue(name)
	}
	return params
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	writeMessage(w, http.StatusNotFound, "Not Found")
}

// Match finds the route of method and path among routes as the local API
// does, on a ServeMux: "/charges/{id}" takes "/charges/ch_1" with id =
// "ch_1", and a literal segment beats a parameter.
func Match(routes []template.Route, method, path string) (template.Route, map[string]string, bool) {
	var found template.Route
	var params map[string]string
	ok := false
	mux := newMux(routes, func(_ http.ResponseWriter, _ *http.Request, route template.Route, p map[string]string) {
		found, params, ok = route, p, true
	})
	r, err := http.NewRequest(method, path, nil)
	if err != nil {
		return template.Route{}, nil, false
	}
	mux.ServeHTTP(discard{}, r)
	return found, params, ok
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
