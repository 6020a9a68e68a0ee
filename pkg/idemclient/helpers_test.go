package idemclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// script is a test server that answers its i-th request with steps[i] (the
// last step again once they run out) and records what each request carried.
type script struct {
	mu    sync.Mutex
	steps []http.HandlerFunc
	seen  []seen
}

type seen struct{ key, body, method, path string }

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	i := len(s.seen)
	s.seen = append(s.seen, seen{key: r.Header.Get(HeaderKey), body: string(b), method: r.Method, path: r.URL.Path})
	step := s.steps[min(i, len(s.steps)-1)]
	s.mu.Unlock()
	step(w, r)
}

func (s *script) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.seen...)
}

func serve(t *testing.T, steps ...http.HandlerFunc) (*httptest.Server, *script) {
	t.Helper()
	s := &script{steps: steps}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, s
}

// answer is a step that answers status with {"error":{"code":code}} (or a
// bare JSON body for a success).
func answer(status int, code string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if code == "" {
			fmt.Fprintf(w, `{"id":"ch_1","status":%d}`, status)
			return
		}
		fmt.Fprintf(w, `{"error":{"code":%q,"message":"m"}}`, code)
	}
}

// problem answers RFC 9457 problem details with a code member.
func problem(status int, code string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"about:blank","title":"t","status":%d,"detail":"d","code":%q}`, status, code)
	}
}

// after adds a Retry-After header to a step.
func after(retryAfter string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", retryAfter)
		h(w, r)
	}
}

// drop reads the request, then closes the connection without answering:
// the server acted, the client never hears.
func drop(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// hang answers only once the client has gone.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

var created = answer(http.StatusCreated, "")

// redirect answers status with Location loc ("" for none).
func redirect(status int, loc string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if loc != "" {
			w.Header().Set("Location", loc)
		}
		w.WriteHeader(status)
	}
}

// counting counts the attempts that reach Base.
type counting struct {
	mu   sync.Mutex
	n    int
	base http.RoundTripper
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.base.RoundTrip(r)
}

func (c *counting) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// testTransport retries fast, over connections that are never reused, so
// that Go's own resend on a reused connection never adds a request. Its
// waits are recorded, not slept, when record is set.
func testTransport(t *testing.T, record *[]time.Duration, optFns ...func(*Options)) (*Transport, *counting) {
	t.Helper()
	base := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(base.CloseIdleConnections)
	c := &counting{base: base}
	tr := NewTransport(append([]func(*Options){func(o *Options) {
		o.Base = c
		o.MinBackoff, o.MaxBackoff = time.Millisecond, 2*time.Millisecond
	}}, optFns...)...)
	if record != nil {
		var mu sync.Mutex
		tr.sleep = func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*record = append(*record, d)
			mu.Unlock()
			return ctx.Err()
		}
	}
	return tr, c
}

func post(t *testing.T, ctx context.Context, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// errOf is the error of a call a test expects to fail; an answer that came
// anyway is closed, so that the failing test does not hold its connection.
func errOf(resp *http.Response, err error) error {
	if resp != nil {
		resp.Body.Close()
	}
	return err
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
