package idemclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// keepAlive is a Transport over an http.Transport that keeps connections
// alive, so that Go's own resend on a reused connection can happen.
func keepAlive(t *testing.T, optFns ...func(*Options)) *Transport {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return NewTransport(append([]func(*Options){func(o *Options) {
		o.Base = base
		o.MinBackoff, o.MaxBackoff = time.Millisecond, 2*time.Millisecond
	}}, optFns...)...)
}

// warm makes one GET through tr, read to the end, so that its connection
// waits in the pool for the next request to reuse.
func warm(t *testing.T, tr *Transport, url string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
}

// events is a caller's own ClientTrace, recording what it is told.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) add(s string) { e.mu.Lock(); e.got = append(e.got, s); e.mu.Unlock() }

func (e *events) list() []string { e.mu.Lock(); defer e.mu.Unlock(); return slices.Clone(e.got) }

func (e *events) context() context.Context {
	return httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn:      func(i httptrace.GotConnInfo) { e.add(fmt.Sprintf("conn reused=%v", i.Reused)) },
		WroteRequest: func(httptrace.WroteRequestInfo) { e.add("wrote") },
		ConnectDone:  func(_, _ string, err error) { e.add(fmt.Sprintf("connect failed=%v", err != nil)) },
	})
}

// TestAnAttemptWhoseResendCouldNotConnectMayHaveActed: the request goes out
// on a kept-alive connection; the server acts, stops listening and drops
// the connection without an answer. Go's http.Transport resends the keyed
// request by itself, cannot connect, and reports only that dial error. The
// attempt wrote its request, so the outcome is unknown, not "nothing
// happened"; and the caller's own ClientTrace still hears every send.
func TestAnAttemptWhoseResendCouldNotConnectMayHaveActed(t *testing.T) {
	var acted atomic.Int32
	var key atomic.Value
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			return
		}
		io.ReadAll(r.Body)
		acted.Add(1) // the charge is made
		key.Store(r.Header.Get(HeaderKey))
		srv.Listener.Close()
		drop(w, r)
	}))
	t.Cleanup(srv.Close)
	tr := keepAlive(t, func(o *Options) { o.MaxAttempts = 3 })
	warm(t, tr, srv.URL)

	var seen events
	err := errOf(tr.RoundTrip(post(t, seen.context(), srv.URL, `{"amount":100}`)))
	got := seen.list()
	if len(got) < 2 || got[0] != "conn reused=true" || got[1] != "wrote" {
		t.Fatalf("trace %q: want the caller's own trace told of a request written on a reused connection", got)
	}
	if n := strings.Count(strings.Join(got, ","), "connect failed=true"); n != 3 {
		t.Fatalf("trace %q: want the caller's own trace told of 3 failed connects (Go's own resend, then attempts 2 and 3)", got)
	}
	if acted.Load() != 1 {
		t.Fatalf("the server acted %d times, want once", acted.Load())
	}
	u := unknown(t, err)
	if u.Key == "" || u.Key != key.Load() || u.Attempts != 3 || strings.Contains(err.Error(), "none of which") {
		t.Fatalf("%+v (%v): want the key the server acted under, after 3 attempts", u, err)
	}
}

// TestAnAnswerToGosOwnResendDoesNotClearTheWrite: the server acts on the
// request written on a reused connection and drops it; Go's resend, on a
// new connection, gets an answer. A refusal then tells nothing of the
// first write; an answer that tells the outcome still comes back.
func TestAnAnswerToGosOwnResendDoesNotClearTheWrite(t *testing.T) {
	cases := []struct {
		name    string
		resend  http.HandlerFunc
		status  int
		unknown bool
	}{
		{"a 401 from an authorizer", answer(401, "unauthenticated"), 401, true},
		{"a 429", answer(429, "rate_limited"), 429, true},
		{"a replayed 201", replayed(201, ""), 201, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, s := serve(t, func(w http.ResponseWriter, r *http.Request) {}, drop, tc.resend)
			tr := keepAlive(t, func(o *Options) { o.MaxAttempts = 1 })
			warm(t, tr, srv.URL)
			resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`))
			got := s.requests()
			if len(got) != 3 || got[1].key == "" || got[2].key != got[1].key {
				t.Fatalf("%+v: the premise is Go's own resend under the same key", got)
			}
			if !tc.unknown {
				if err != nil || resp.StatusCode != tc.status {
					t.Fatalf("resp %v, err %v: want the replayed %d", resp, err, tc.status)
				}
				readAll(t, resp)
				return
			}
			if u := unknown(t, err); u.Key != got[1].key || u.Attempts != 1 || u.StatusCode != tc.status {
				t.Fatalf("%+v", u)
			}
		})
	}
}

// noHooks is a Base that sends each request on a context of its own, so
// the trace of the request's context is never told of its sends: here it
// sends to base, and, when that fails, once more to a replica that is
// down, and reports that dial error.
type noHooks struct {
	base http.RoundTripper
	down string
}

func (n noHooks) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := n.base.RoundTrip(r.Clone(context.Background()))
	if err == nil {
		return resp, nil
	}
	again := r.Clone(context.Background())
	again.URL.Host = n.down
	if again.Body, err = r.GetBody(); err != nil {
		return nil, err
	}
	return n.base.RoundTrip(again)
}

// TestABaseThatReportsNoSendsMayHaveActed: when the trace cannot show that
// an attempt never had a connection, a dial error is not taken as proof
// that nothing was sent.
func TestABaseThatReportsNoSendsMayHaveActed(t *testing.T) {
	srv, s := serve(t, drop)
	tr, _ := testTransport(t, nil, func(o *Options) { o.MaxAttempts = 2 })
	tr.o.Base = noHooks{base: tr.o.Base, down: closedAddr(t)}
	err := errOf(tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`)))
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("err %v: the premise is a last error from a dial", err)
	}
	if u := unknown(t, err); u.Attempts != 2 || len(s.requests()) != 2 {
		t.Fatalf("%+v after %d requests", u, len(s.requests()))
	}
}

// hooked is a Base that tells the request's trace what it did, and fails:
// it asked for a connection and, if got is set, got one, but reports no
// write.
type hooked struct{ got bool }

func (h hooked) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	if trace := httptrace.ContextClientTrace(r.Context()); trace != nil && trace.GetConn != nil {
		trace.GetConn(r.URL.Host)
		if h.got {
			trace.GotConn(httptrace.GotConnInfo{})
		}
	}
	return nil, errors.New("connection reset by peer")
}

// TestAnAttemptThatHadAConnectionMayHaveActed: a connection got counts as
// a send, whether or not a write was reported (over HTTP/2, RoundTrip can
// fail before the write hooks of a written request are called); one asked
// for and never got is no send.
func TestAnAttemptThatHadAConnectionMayHaveActed(t *testing.T) {
	for _, got := range []bool{true, false} {
		tr := NewTransport(func(o *Options) { o.Base, o.MaxAttempts, o.MinBackoff = hooked{got: got}, 2, time.Millisecond })
		err := errOf(tr.RoundTrip(post(t, context.Background(), "http://192.0.2.1/charges", `{}`)))
		if errors.Is(err, ErrOutcomeUnknown) != got {
			t.Fatalf("a connection got: %v; err %v", got, err)
		}
	}
}

// closedAddr is an address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// stuckDial is an http.Transport whose connections are never made: each
// dial waits for its context to end.
func stuckDial() *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
}

// TestEndedWhileConnectingIsAPlainFailure: an attempt that the context or
// AttemptTimeout ends before it had a connection did nothing.
func TestEndedWhileConnectingIsAPlainFailure(t *testing.T) {
	t.Run("the context's deadline", func(t *testing.T) {
		tr := NewTransport(func(o *Options) { o.Base = stuckDial() })
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := errOf(tr.RoundTrip(post(t, ctx, "http://192.0.2.1/charges", `{}`)))
		if err == nil || errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v: want a plain deadline error", err)
		}
	})
	t.Run("AttemptTimeout", func(t *testing.T) {
		tr := NewTransport(func(o *Options) {
			o.Base, o.AttemptTimeout, o.MaxAttempts, o.MinBackoff = stuckDial(), 50*time.Millisecond, 2, time.Millisecond
		})
		err := errOf(tr.RoundTrip(post(t, context.Background(), "http://192.0.2.1/charges", `{}`)))
		if err == nil || errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, errAttemptTimeout) {
			t.Fatalf("err %v: want a plain failure after two attempts that timed out connecting", err)
		}
	})
}

// TestEndedMidWriteMayHaveActed: the context ends while the body is being
// written, to a server that has read the start of it and then stopped
// reading.
func TestEndedMidWriteMayHaveActed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var seen events
	ctx, cancel := context.WithCancel(seen.context())
	defer cancel()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.CopyN(io.Discard, c, 64<<10) // the write has begun
		cancel()                        // 32 MiB do not fit in the socket buffers: it is mid-write
		<-ctx.Done()
	}()
	req := post(t, ctx, "http://"+l.Addr().String(), strings.Repeat("x", 32<<20))
	tr := NewTransport(func(o *Options) { o.Base = &http.Transport{DisableKeepAlives: true} })
	err = errOf(tr.RoundTrip(req))
	if got := seen.list(); !slices.Contains(got, "conn reused=false") || !slices.Contains(got, "wrote") {
		t.Fatalf("trace %q: the premise is a connection made and a write that ended", got)
	}
	if u := unknown(t, err); u.Attempts != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("%+v (%v)", u, err)
	}
}
