package apigw

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
)

// The limits a request meets before its function runs: API Gateway's on
// the body, 10 MB (http-api-quotas.html, "Payload size"), then Lambda's on
// a synchronous invocation's payload, the event, 6 MB (Lambda quotas,
// gettingstarted-limits.html). Either is answered 413 "Request Entity Too
// Large", the status http-api-monitor.html names.
const (
	maxPayload       = 10 << 20
	maxInvokePayload = 6 << 20
)

// Function is one function to serve: its routes and how to run it.
type Function struct {
	Def       *template.Function
	Bootstrap string
	Env       []string
}

// Server is the local HTTP API. Create it with New.
type Server struct {
	auth   *Authorizer
	log    *slog.Logger
	routes []template.Route
	owner  map[template.Route]*rie.Pool
	pools  []*rie.Pool
	router *router
	doc    atomic.Pointer[document] // see Publish
}

// New returns a server for fns, each run under the emulator at emulator with
// up to concurrency execution environments, like a Lambda function's
// concurrency: concurrent requests run in different processes and race on
// DynamoDB as they would deployed. It fails on routes that cannot be
// ordered (see Match).
func New(emulator string, fns []Function, auth *Authorizer, concurrency int, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{auth: auth, log: log, owner: map[template.Route]*rie.Pool{}}
	for _, f := range fns {
		o := rie.Options{Env: f.Env, Timeout: time.Duration(f.Def.Timeout) * time.Second}
		p := rie.NewPool(f.Def.LogicalID, emulator, f.Bootstrap, o, concurrency)
		s.pools = append(s.pools, p)
		for _, r := range f.Def.Routes {
			s.routes = append(s.routes, r)
			s.owner[r] = p
		}
	}
	rt, err := newRouter(s.routes)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.router = rt
	return s, nil
}

// Routes are the routes served, as the template declares them.
func (s *Server) Routes() []template.Route { return s.routes }

// ServeHTTP serves r on the route of the template that takes it (see
// Match), or the published description (see Publish), or answers 404 as
// API Gateway does.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route, params, ok := s.router.match(r)
	if !ok {
		if s.serveDocument(w, r) {
			return
		}
		notFound(w)
		return
	}
	s.serveRoute(w, r, route, params)
}

// serveRoute checks r's token, invokes route's function with r's event, and
// writes the function's response.
func (s *Server) serveRoute(w http.ResponseWriter, r *http.Request, route template.Route, params map[string]string) {
	start := time.Now()
	claims, err := s.auth.Verify(r.Header.Get("Authorization"))
	if err != nil {
		s.log.Info("api: unauthorized", "route", route.Method+" "+route.Path, "reason", err.Error())
		if !errors.Is(err, errNoToken) {
			w.Header().Set("www-authenticate", challenge(err))
		}
		writeMessage(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	payload, status := s.payload(r, route, params, claims)
	if status != 0 {
		writeMessage(w, status, http.StatusText(status))
		return
	}
	p := s.owner[route]
	out, err := p.Invoke(r.Context(), payload)
	if err != nil {
		status := invokeFailure(err)
		s.log.Warn("api: invocation failed", "function", p.Name, "status", status, "error", err.Error())
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeMessage(w, status, http.StatusText(status))
		return
	}
	resp, err := Response(out)
	if err != nil {
		s.log.Warn("api: invalid function response", "function", p.Name, "error", err.Error())
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	_ = Write(w, resp) // answered either way: its own 500 for a body that is not base64, or a write to a client gone
	s.log.Info("api", "method", r.Method, "path", r.URL.Path, "status", resp.StatusCode, "function", p.Name, "ms", time.Since(start).Milliseconds())
}

// invokeFailure is what a client gets for an invocation that failed: 500,
// as API Gateway answers a function's own error; and 503 with Retry-After
// for a failure that is not the function's answer, which a client retries:
// an environment that could not start or that the emulator could not
// reach, a send it refused, and a function past its timeout (under the
// emulator that is mostly this machine's load, not the function: the same
// invocation on Lambda would not have run out of time).
func invokeFailure(err error) int {
	if errors.Is(err, rie.ErrFunction) && !errors.Is(err, rie.ErrTimeout) {
		return http.StatusInternalServerError
	}
	return http.StatusServiceUnavailable
}

// payload is the invocation payload of r's event, or the status API
// Gateway answers instead: 413 for a body or an event over its limit.
func (s *Server) payload(r *http.Request, route template.Route, params, claims map[string]string) ([]byte, int) {
	body, err := ReadBody(r, maxPayload)
	if err != nil {
		return nil, http.StatusBadRequest
	}
	if len(body) > maxPayload {
		return nil, http.StatusRequestEntityTooLarge
	}
	payload, err := json.Marshal(Event(r, body, route, params, claims))
	if err != nil {
		return nil, http.StatusInternalServerError
	}
	if len(payload) > maxInvokePayload {
		s.log.Info("api: event over Lambda's invocation payload limit", "route", route.Method+" "+route.Path, "bytes", len(payload))
		return nil, http.StatusRequestEntityTooLarge
	}
	return payload, 0
}

// Crash kills, with SIGKILL, every execution environment that is running an
// invocation now: the function process dies mid-request, as when a Lambda
// runs out of memory or its host fails. It returns how many it killed.
func (s *Server) Crash() int {
	n := 0
	for _, p := range s.pools {
		n += p.Crash()
	}
	return n
}

// Close stops every execution environment.
func (s *Server) Close() {
	for _, p := range s.pools {
		p.Close()
	}
}

// writeMessage answers as API Gateway does for its own errors.
func writeMessage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"message":%q}`, msg) //nolint:gosec // G705: a status text of our own, quoted, in a JSON body served as application/json
}
