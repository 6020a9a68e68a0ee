package idem

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/idemkeys/idem/pkg/httpapi"
)

// MiddlewareOptions configure Store.Middleware.
type MiddlewareOptions struct {
	// Scope chooses the scope from the identity that an authentication
	// middleware in front verified (from the request's context, say). It
	// must never read a value the client sets. Required: without it, or
	// when it returns "", every request is 401.
	Scope func(r *http.Request) string
	// MaxBodyBytes refuses larger bodies with 413 before anything is
	// written (default 64 KiB); a negative value panics when the
	// door is built, with an error that matches ErrInvalidOptions.
	MaxBodyBytes int
	// Atomic runs the handler with Store.DoAtomic instead of Store.Do.
	Atomic bool
	// Logger, when set, receives a line for each refused request.
	Logger *slog.Logger
}

// Middleware is Store.HTTP for net/http services (ECS, App Runner, the
// Lambda Web Adapter): wrap a handler, get a handler. The handler finds the
// operation's Tx with TxFrom(r.Context()), and Scope and Key there too; its
// response (status, headers, cookies, body) is captured, committed with its
// writes and replayed. A 5xx it writes is not stored: it goes back as it is
// and the key is lapsed for the retry, as a TransientError is elsewhere.
//
// Wrap each handler as it is registered on a Go 1.22 ServeMux
// (mux.Handle("POST /orders/{id}", mw(h))): the fingerprint then takes
// r.Pattern and its path values, not the raw path, with the raw query and
// the body (an empty body is a body). Outside a mux it takes the path.
func (s *Store) Middleware(optFns ...func(*MiddlewareOptions)) func(http.Handler) http.Handler {
	var o MiddlewareOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Scope == nil {
		o.Scope = func(*http.Request) string { return "" }
	}
	cfg := newDoorConfig(o.MaxBodyBytes, o.Atomic, o.Logger)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			in := readHTTP(r, cfg.maxBody)
			in.scope = o.Scope(r)
			noCheck := func([]byte) *httpapi.Refusal { return nil }
			resp := s.serve(r.Context(), in, cfg, noCheck, func(ctx context.Context, _ string, _ *Tx) (Response, error) {
				rec := &recorder{header: http.Header{}}
				r2 := r.WithContext(ctx)
				r2.Body = io.NopCloser(bytes.NewReader(in.body))
				next.ServeHTTP(rec, r2)
				return rec.response(), nil // a 5xx is not stored (serve)
			})
			writeHTTP(w, resp)
		})
	}
}

// readHTTP reads a request's body, up to one byte past the limit.
func readHTTP(r *http.Request, maxBody int) inbound {
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBody)+1))
	refusal := httpapi.CheckSize(len(body), maxBody)
	if err != nil && refusal == nil {
		refusal = &httpapi.Refusal{StatusCode: http.StatusBadRequest, Code: "invalid_body", Message: "the body could not be read"}
	}
	key := r.Header.Values(HeaderIdempotencyKey)
	in := inbound{key: strings.Join(key, ","), hasKey: len(key) > 0, method: r.Method, ctype: r.Header.Get("Content-Type"), body: body, refusal: refusal}
	route := r.Pattern
	if route == "" {
		route = r.URL.Path
	}
	in.route = routeString(route, pathValues(r), r.URL.RawQuery)
	return in
}

// pathValues are the values of the wildcards of r.Pattern ("{id}", "{rest...}").
func pathValues(r *http.Request) map[string]string {
	values := map[string]string{}
	for p := r.Pattern; ; {
		i := strings.IndexByte(p, '{')
		j := strings.IndexByte(p[i+1:], '}')
		if i < 0 || j < 0 {
			return values
		}
		name := strings.TrimSuffix(p[i+1:i+1+j], "...")
		if name != "$" {
			values[name] = r.PathValue(name)
		}
		p = p[i+1+j:]
	}
}

// recorder captures what a handler writes.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rec *recorder) Header() http.Header { return rec.header }

// WriteHeader keeps the final status: a 1xx (103 Early Hints, say) is
// interim (RFC 9110 §15.2), neither stored nor sent on.
func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 && status >= 200 {
		rec.status = status
	}
}

func (rec *recorder) Write(b []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return rec.body.Write(b)
}

func (rec *recorder) response() Response {
	if rec.status == 0 {
		rec.status = http.StatusOK // as net/http sends a handler that wrote nothing
	}
	multi := map[string][]string(rec.header)
	if rec.header.Get("Content-Type") == "" && rec.body.Len() > 0 {
		multi = maps.Clone(multi)
		multi["Content-Type"] = []string{http.DetectContentType(rec.body.Bytes())}
	}
	out, _ := fromParts(rec.status, nil, multi, nil, "", false) // not base64: no error
	out.Body = slices.Clone(rec.body.Bytes())
	return out
}

// writeHTTP writes a stored response.
func writeHTTP(w http.ResponseWriter, r Response) {
	h := w.Header()
	for k, v := range r.Header {
		h.Set(k, v)
	}
	for _, c := range r.Cookies {
		h.Add("Set-Cookie", c)
	}
	w.WriteHeader(r.StatusCode)
	w.Write(r.Body)
}
