// Package api serves template.yaml's HTTP API on this machine, as
// `sam local start-api` does: each request is matched to a route of the
// template, checked by a JWT authorizer, turned into a payload 2.0 event and
// invoked on the function's bootstrap under the Lambda Runtime Interface
// Emulator, and the function's response is sent back.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
)

// maxPayload is API Gateway's limit on a request body.
const maxPayload = 10 << 20

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
}

// New returns a server for fns, each run under the emulator at emulator with
// up to concurrency execution environments, like a Lambda function's
// concurrency: concurrent requests run in different processes and race on
// DynamoDB as they would deployed.
func New(emulator string, fns []Function, auth *Authorizer, concurrency int, log *slog.Logger) *Server {
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
	return s
}

// Routes are the routes served, as the template declares them.
func (s *Server) Routes() []template.Route { return s.routes }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	route, params, ok := apigw.Match(s.routes, r.Method, r.URL.Path)
	if !ok {
		writeMessage(w, http.StatusNotFound, "Not Found")
		return
	}
	claims, err := s.auth.Verify(r.Header.Get("Authorization"))
	if err != nil {
		s.log.Info("api: unauthorized", "route", route.Method+" "+route.Path, "reason", err.Error())
		writeMessage(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	body, err := apigw.ReadBody(r, maxPayload)
	if err != nil {
		writeMessage(w, http.StatusBadRequest, "Bad Request")
		return
	}
	if len(body) > maxPayload {
		writeMessage(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	payload, err := json.Marshal(apigw.Event(r, body, route, params, claims))
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	p := s.owner[route]
	out, err := p.Invoke(r.Context(), payload)
	if err != nil {
		s.log.Warn("api: invocation failed", "function", p.Name, "error", err.Error())
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	apigw.Write(w, resp)
	s.log.Info("api", "method", r.Method, "path", r.URL.Path, "status", resp.StatusCode, "function", p.Name, "ms", time.Since(start).Milliseconds())
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
	fmt.Fprintf(w, `{"message":%q}`, msg)
}

// Authorizer verifies bearer tokens as the HTTP API's JWT authorizer does:
// signature, issuer, audience, expiry. Locally the tokens are HS256 with a
// secret of make run's; deployed, API Gateway checks the issuer's keys.
type Authorizer struct {
	Secret   []byte
	Issuer   string
	Audience string
}

// Verify returns the token's claims as API Gateway passes them to a
// function: every value a string.
func (a *Authorizer) Verify(header string) (map[string]string, error) {
	raw, ok := stripBearer(header)
	if !ok {
		return nil, errors.New("no bearer token")
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return a.Secret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer(a.Issuer), jwt.WithAudience(a.Audience), jwt.WithExpirationRequired())
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		switch v := v.(type) {
		case string:
			out[k] = v
		case float64:
			out[k] = fmt.Sprintf("%.0f", v)
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out, nil
}

// Token mints a token for sub, valid for ttl.
func (a *Authorizer) Token(sub string, ttl time.Duration) (string, error) {
	now := time.Now()
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub, "iss": a.Issuer, "aud": a.Audience, "iat": now.Unix(), "exp": now.Add(ttl).Unix(),
	}).SignedString(a.Secret)
}

func stripBearer(h string) (string, bool) {
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return h[len(prefix):], true
}
