package apigw

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/idemkeys/idem/local/template"
)

// router picks the template's route for a request as API Gateway does: the
// path first, on a ServeMux of method-less patterns (a literal segment beats
// a parameter, a greedy parameter comes last), then the method among that
// path's routes: the exact method, else ANY, else none. Registering the
// patterns without their methods keeps ServeMux's method rules (GET taking
// HEAD, a method-less pattern conflicting with a method one) out of it.
type router struct {
	mux    *http.ServeMux
	byPath map[string][]template.Route // by ServeMux pattern, the trailing-slash one included
}

// newRouter registers routes; it fails on two routes whose paths ServeMux
// cannot order (as "/a/{x}" and "/{y}/b").
func newRouter(routes []template.Route) (*router, error) {
	rt := &router{mux: http.NewServeMux(), byPath: map[string][]template.Route{}}
	for _, route := range routes {
		for _, p := range patterns(route.Path) {
			if _, seen := rt.byPath[p]; !seen {
				if err := register(rt.mux, p); err != nil {
					return nil, fmt.Errorf("apigw: route %s %s: %w", route.Method, route.Path, err)
				}
			}
			rt.byPath[p] = append(rt.byPath[p], route)
		}
	}
	return rt, nil
}

// register adds pattern to mux, with ServeMux's panic on a conflict as an
// error. Its handler only records the request ServeMux routed to it, with
// the path values ServeMux set.
func register(mux *http.ServeMux, pattern string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	mux.HandleFunc(pattern, func(_ http.ResponseWriter, r *http.Request) {
		*r.Context().Value(routedKey{}).(**http.Request) = r
	})
	return nil
}

// routedKey holds, in a request's context, where register's handler puts
// the request as routed.
type routedKey struct{}

// patterns are the ServeMux patterns of a template path: its parameters
// named by position (p0, p1, ...; the template's names need not be Go
// identifiers), "{x+}" greedy as "{p0...}", the root as "/{$}", and, as API
// Gateway ignores a trailing slash, the same path with one.
func patterns(tpl string) []string {
	segs := strings.Split(strings.Trim(tpl, "/"), "/")
	if len(segs) == 1 && segs[0] == "" {
		return []string{"/{$}"}
	}
	n := 0
	for i, seg := range segs {
		name, ok := wildcard(seg)
		if !ok {
			continue
		}
		if strings.HasSuffix(name, "+") {
			segs[i] = fmt.Sprintf("{p%d...}", n)
		} else {
			segs[i] = fmt.Sprintf("{p%d}", n)
		}
		n++
	}
	p := "/" + strings.Join(segs, "/")
	if strings.HasSuffix(p, "...}") {
		return []string{p}
	}
	return []string{p, p + "/{$}"}
}

// wildcard is the name of a "{name}" segment, as written ("path+" greedy).
func wildcard(seg string) (string, bool) {
	name, ok := strings.CutPrefix(seg, "{")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(name, "}")
}

// match is r's route and its path parameters (nil when it has none). A path
// that is not clean ("//x", "/a/../b") takes no route, nor does a greedy
// parameter with nothing to take.
func (rt *router) match(r *http.Request) (template.Route, map[string]string, bool) {
	p := r.URL.Path
	if p == "" || (p != "/" && path.Clean(p) != strings.TrimSuffix(p, "/")) {
		return template.Route{}, nil, false
	}
	var routed *http.Request
	rt.mux.ServeHTTP(discard{}, r.WithContext(context.WithValue(r.Context(), routedKey{}, &routed)))
	if routed == nil {
		return template.Route{}, nil, false
	}
	var found *template.Route
	for _, route := range rt.byPath[routed.Pattern] {
		if route.Method == r.Method {
			found = &route
			break
		}
		if route.Method == "ANY" && found == nil {
			found = &route
		}
	}
	if found == nil {
		return template.Route{}, nil, false
	}
	params, ok := pathParams(routed, found.Path)
	return *found, params, ok
}

// pathParams reads tpl's parameters from r under the template's names.
func pathParams(r *http.Request, tpl string) (map[string]string, bool) {
	var params map[string]string
	n := 0
	for _, seg := range strings.Split(tpl, "/") {
		name, ok := wildcard(seg)
		if !ok {
			continue
		}
		v := r.PathValue(fmt.Sprintf("p%d", n))
		n++
		if v == "" {
			return nil, false
		}
		if params == nil {
			params = map[string]string{}
		}
		params[strings.TrimSuffix(name, "+")] = v
	}
	return params, true
}

func notFound(w http.ResponseWriter) {
	writeMessage(w, http.StatusNotFound, "Not Found")
}

// Match finds the route of method and path among routes as the local API
// does: "/charges/{id}" takes "/charges/ch_1" with id = "ch_1", and a
// literal segment beats a parameter. Routes that cannot be ordered match
// nothing (New reports them).
func Match(routes []template.Route, method, path string) (template.Route, map[string]string, bool) {
	rt, err := newRouter(routes)
	if err != nil {
		return template.Route{}, nil, false
	}
	r, err := http.NewRequest(method, path, nil)
	if err != nil {
		return template.Route{}, nil, false
	}
	return rt.match(r)
}

// discard is a ResponseWriter that keeps nothing: ServeMux only routes.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
