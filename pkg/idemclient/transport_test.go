package idemclient

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestOneKeyPerOperationKeptAcrossRetries(t *testing.T) {
	srv, s := serve(t, answer(503, "provider_busy"), drop, created)
	tr, _ := testTransport(t, nil)
	req := post(t, context.Background(), srv.URL, `{"amount":100}`)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	got := s.requests()
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3", len(got))
	}
	key := got[0].key
	if u, err := uuid.Parse(key); err != nil || u.Version() != 4 {
		t.Fatalf("key %q is not a version 4 UUID (%v)", key, err)
	}
	for i, r := range got {
		if r.key != key {
			t.Fatalf("attempt %d carried key %q, attempt 1 %q", i+1, r.key, key)
		}
	}
	if Key(resp) != key {
		t.Fatalf("Key(resp) = %q, want %q", Key(resp), key)
	}
	if req.Header.Get(HeaderKey) != "" {
		t.Fatal("RoundTrip modified the caller's request")
	}

	// Another operation gets another key.
	srv2, s2 := serve(t, created)
	resp, err = tr.RoundTrip(post(t, context.Background(), srv2.URL, `{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if k := s2.requests()[0].key; k == key || k == "" {
		t.Fatalf("the second operation's key is %q, the first's %q", k, key)
	}
}

func TestCallerKeyIsKept(t *testing.T) {
	srv, s := serve(t, answer(500, "internal_error"), created)
	tr, _ := testTransport(t, nil)
	req := post(t, context.Background(), srv.URL, `{}`)
	req.Header.Set(HeaderKey, "order-42-payment")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	for i, r := range s.requests() {
		if r.key != "order-42-payment" {
			t.Fatalf("attempt %d carried %q, want the caller's key", i+1, r.key)
		}
	}
}

func TestRetryRules(t *testing.T) {
	cases := []struct {
		name     string
		first    http.HandlerFunc
		attempts int // then 201, when retried
		status   int // the status handed back
	}{
		{"201", created, 1, 201},
		{"400", answer(400, "invalid_request"), 1, 400},
		{"401", answer(401, "unauthenticated"), 1, 401},
		{"403", answer(403, "forbidden"), 1, 403},
		{"404", answer(404, "not_found"), 1, 404},
		{"413", answer(413, "body_too_large"), 1, 413},
		{"422", answer(422, "idempotency_key_reused"), 1, 422},
		{"422 problem", problem(422, "idempotency_key_reused"), 1, 422},
		{"409 of another code", answer(409, "order_exists"), 1, 409},
		{"409 request_in_progress", answer(409, CodeInProgress), 2, 201},
		{"409 request_in_progress, problem details", problem(409, CodeInProgress), 2, 201},
		{"429", answer(429, "rate_limited"), 2, 201},
		{"500", answer(500, "internal_error"), 2, 201},
		{"501", answer(501, "not_implemented"), 2, 201},
		{"502", answer(502, "provider_unavailable"), 2, 201},
		{"503", problem(503, "provider_busy"), 2, 201},
		{"504 with no body", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(504) }, 2, 201},
		{"dropped connection", drop, 2, 201},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := serve(t, tc.first, created)
			tr, sent := testTransport(t, nil)
			resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`))
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if sent.count() != tc.attempts {
				t.Fatalf("%d attempts, want %d", sent.count(), tc.attempts)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

func TestRefusalComesBackAsTheResponse(t *testing.T) {
	srv, _ := serve(t, problem(422, "idempotency_key_reused"))
	tr, sent := testTransport(t, nil)
	resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`))
	if err != nil {
		t.Fatalf("a refusal came back as an error: %v", err)
	}
	if code := ProblemCode(resp); resp.StatusCode != 422 || code != "idempotency_key_reused" {
		t.Fatalf("got %d %q", resp.StatusCode, code)
	}
	if body := readAll(t, resp); !strings.Contains(body, `"code":"idempotency_key_reused"`) {
		t.Fatalf("the body was not kept whole after ProblemCode: %s", body)
	}
	if sent.count() != 1 {
		t.Fatalf("%d attempts, want 1", sent.count())
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	now := time.Now().Truncate(time.Second) // an HTTP-date has whole seconds
	cases := []struct {
		name  string
		first http.HandlerFunc
		want  time.Duration
	}{
		{"seconds on a 503", after("3", answer(503, "provider_busy")), 3 * time.Second},
		{"seconds on a 409 in progress", after("2", problem(409, CodeInProgress)), 2 * time.Second},
		{"seconds on a 429", after("4", answer(429, "rate_limited")), 4 * time.Second},
		// 500 is the first of the retried 5xx: its Retry-After counts as a 503's does.
		{"seconds on a 500", after("5", answer(500, "internal_error")), 5 * time.Second},
		{"an HTTP-date", after(now.Add(7*time.Second).Format(http.TimeFormat), answer(503, "provider_busy")), 7 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := serve(t, tc.first, created)
			var waits []time.Duration
			tr, _ := testTransport(t, &waits)
			tr.now = func() time.Time { return now }
			resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`))
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if len(waits) != 1 || waits[0] != tc.want {
				t.Fatalf("waited %v, want [%v]", waits, tc.want)
			}
		})
	}
}

// longestWhole is the longest Duration that is a whole number of
// seconds.
const longestWhole = math.MaxInt64 / time.Second * time.Second

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"5", 5 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"99999999999999999999", 1<<63 - 1, true},
		// The most whole seconds a Duration holds are read as they are; one
		// more is past what a Duration holds, and reads as the longest one.
		{strconv.FormatInt(int64(longestWhole/time.Second), 10), longestWhole, true},
		{strconv.FormatInt(int64(longestWhole/time.Second)+1, 10), 1<<63 - 1, true},
		{"Sun, 01 Mar 2026 12:00:09 GMT", 9 * time.Second, true},  // IMF-fixdate
		{"Sunday, 01-Mar-26 12:00:09 GMT", 9 * time.Second, true}, // RFC 850
		{"Sun Mar  1 12:00:09 2026", 9 * time.Second, true},       // asctime
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true},                // past
		{"", 0, false}, {"-1", 0, false}, {"1.5", 0, false}, {"+3", 0, false}, {"soon", 0, false},
	}
	for _, tc := range cases {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBackoffIsCappedExponentialWithJitter(t *testing.T) {
	lo, hi := 100*time.Millisecond, 5*time.Second
	for n := 1; n <= 200; n++ {
		step := hi
		if n <= 6 {
			step = lo << (n - 1) // 100ms, 200ms, ... 3.2s
		}
		low, high := backoff(n, lo, hi, 0), backoff(n, lo, hi, 0.999999)
		if low != step/2 || high > step || high < step-step/1000 {
			t.Fatalf("attempt %d: waits span [%v, %v], want [%v, %v)", n, low, high, step/2, step)
		}
	}
	if d := backoff(3, lo, hi, 0.5); d == backoff(3, lo, hi, 0) {
		t.Fatal("no jitter")
	}
	if d := backoff(80, time.Hour, 2*time.Hour, 0.999); d > 2*time.Hour {
		t.Fatalf("overflowed past the cap: %v", d)
	}
	// At the edges of a Duration the wait is still min(hi, lo·2ⁿ⁻¹): the
	// last step that fits (2⁶² ns, from 1 ns), and past it the cap.
	for _, c := range []struct {
		n    int
		hi   time.Duration
		step time.Duration
	}{
		{63, math.MaxInt64, 1 << 62},
		{63, 1 << 62, 1 << 62},
		{64, math.MaxInt64, math.MaxInt64},
		{65, math.MaxInt64, math.MaxInt64},
		{200, time.Hour, time.Hour},
	} {
		if got := backoff(c.n, time.Nanosecond, c.hi, 0); got != c.step/2 {
			t.Errorf("backoff(%d, 1ns, %v) at its least = %v, want half of %v", c.n, c.hi, got, c.step)
		}
	}
}

// TestZeroOptionsTakeTheDefaults holds Options' go doc: a field an option
// leaves zero, or sets below zero, takes its bracketed default, so that
// Options{} and the defaults are one transport; a MaxBackoff under
// MinBackoff is raised to it.
func TestZeroOptionsTakeTheDefaults(t *testing.T) {
	for name, fn := range map[string]func(*Options){
		"zero":     func(o *Options) { *o = Options{} },
		"negative": func(o *Options) { *o = Options{MaxAttempts: -1, MinBackoff: -1, MaxBackoff: -1, MaxRetryAfter: -1} },
	} {
		o := NewTransport(fn).o
		d := defaults()
		if o.Base != d.Base || !slices.Equal(o.Methods, d.Methods) || o.MaxAttempts != 8 || o.MinBackoff != 100*time.Millisecond ||
			o.MaxBackoff != 5*time.Second || o.MaxRetryAfter != time.Minute || o.NewKey == nil || len(o.NewKey()) != 36 {
			t.Errorf("%s: options %+v, want the defaults", name, o)
		}
	}
	if o := NewTransport(func(o *Options) { o.MinBackoff, o.MaxBackoff = time.Second, time.Millisecond }).o; o.MaxBackoff != time.Second {
		t.Errorf("MaxBackoff %v under MinBackoff 1s, want 1s", o.MaxBackoff)
	}
}

func TestBodyIsReplayedFromGetBody(t *testing.T) {
	srv, s := serve(t, answer(503, "provider_busy"), drop, created)
	tr, _ := testTransport(t, nil)
	const body = `{"amount":1050,"currency":"usd"}`
	req := post(t, context.Background(), srv.URL, body)
	var calls atomic.Int32
	getBody := req.GetBody
	req.GetBody = func() (io.ReadCloser, error) { calls.Add(1); return getBody() }
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	for i, r := range s.requests() {
		if r.body != body {
			t.Fatalf("attempt %d sent %q, want %q", i+1, r.body, body)
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("GetBody called %d times, want once per retry (2)", calls.Load())
	}
}

func TestBodyWithoutGetBodyIsRefusedBeforeSending(t *testing.T) {
	srv, s := serve(t, created)
	tr, _ := testTransport(t, nil)
	req, _ := http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(strings.NewReader("{}")))
	if req.GetBody != nil {
		t.Fatal("test premise: this body has no GetBody")
	}
	err := errOf(tr.RoundTrip(req))
	if !errors.Is(err, ErrBodyNotReplayable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("err = %v, want ErrBodyNotReplayable", err)
	}
	if n := len(s.requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestDeadlineGivesUnknownOutcomeWithTheKey(t *testing.T) {
	t.Run("a Retry-After past the deadline stops at once", func(t *testing.T) {
		srv, s := serve(t, after("30", problem(503, "provider_busy")))
		var waits []time.Duration
		tr, _ := testTransport(t, &waits)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := errOf(tr.RoundTrip(post(t, ctx, srv.URL, `{}`)))
		u := unknown(t, err)
		if u.Key != s.requests()[0].key || u.Attempts != 1 || u.StatusCode != 503 || u.Code != "provider_busy" || u.RetryAfter != 30*time.Second {
			t.Fatalf("%+v", u)
		}
		if !errors.Is(err, context.DeadlineExceeded) || len(waits) != 0 {
			t.Fatalf("err %v, waits %v: want a deadline error and no wait", err, waits)
		}
	})
	t.Run("the deadline ends an attempt in flight", func(t *testing.T) {
		srv, s := serve(t, hang)
		tr, _ := testTransport(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req := post(t, ctx, srv.URL, `{}`)
		req.Header.Set(HeaderKey, "k-in-flight")
		err := errOf(tr.RoundTrip(req))
		u := unknown(t, err)
		if u.Key != "k-in-flight" || u.Attempts != 1 || u.StatusCode != 0 || u.Response != nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%+v (%v)", u, err)
		}
		if len(s.requests()) != 1 {
			t.Fatalf("%d requests", len(s.requests()))
		}
	})
	t.Run("the context cancelled during a wait", func(t *testing.T) {
		srv, _ := serve(t, answer(502, "provider_unavailable"))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tr, _ := testTransport(t, nil, func(o *Options) {
			o.MinBackoff, o.MaxBackoff = time.Hour, time.Hour
			o.OnRetry = func(Retry) { cancel() }
		})
		err := errOf(tr.RoundTrip(post(t, ctx, srv.URL, `{}`)))
		if u := unknown(t, err); u.StatusCode != 502 || !errors.Is(err, context.Canceled) {
			t.Fatalf("%+v (%v)", u, err)
		}
		if u := unknown(t, err); u.Response == nil || !strings.Contains(readAll(t, u.Response), "provider_unavailable") {
			t.Fatalf("Response %+v: want the 502 answered before the wait", u.Response)
		}
	})
}

// TestRetriesEndingAfterAnAttemptThatMayHaveActedGiveUnknownOutcome: the
// attempts run out, or a Retry-After is too long to wait, or (through
// Client) a dropped connection is the last word.
func TestRetriesEndingAfterAnAttemptThatMayHaveActedGiveUnknownOutcome(t *testing.T) {
	t.Run("the attempts run out", func(t *testing.T) {
		srv, _ := serve(t, answer(503, "provider_busy"))
		tr, sent := testTransport(t, nil, func(o *Options) { o.MaxAttempts = 3 })
		err := errOf(tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`)))
		if u := unknown(t, err); u.Attempts != 3 || sent.count() != 3 || u.Err != nil {
			t.Fatalf("%+v", u)
		}
		if u := unknown(t, err); u.Response == nil || u.Response.StatusCode != 503 || !strings.Contains(readAll(t, u.Response), "provider_busy") {
			t.Fatalf("Response %+v: want the last 503, its body readable", u.Response)
		}
	})
	t.Run("a Retry-After over MaxRetryAfter", func(t *testing.T) {
		srv, _ := serve(t, after("120", answer(503, "provider_busy")))
		tr, _ := testTransport(t, nil)
		err := errOf(tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`)))
		if u := unknown(t, err); u.RetryAfter != 2*time.Minute || u.Attempts != 1 {
			t.Fatalf("%+v", u)
		}
	})
	t.Run("through Client, wrapped in a url.Error", func(t *testing.T) {
		srv, _ := serve(t, drop)
		c := New(func(o *Options) {
			o.Base = &http.Transport{DisableKeepAlives: true}
			o.MinBackoff, o.MaxAttempts = time.Millisecond, 2
		})
		err := errOf(c.Do(post(t, context.Background(), srv.URL, `{}`)))
		if u := unknown(t, err); u.Attempts != 2 || u.Key == "" {
			t.Fatalf("%+v", u)
		}
	})
}

func TestNothingSentIsAPlainFailure(t *testing.T) {
	t.Run("the server refused every attempt with 429", func(t *testing.T) {
		srv, _ := serve(t, answer(429, "rate_limited"))
		tr, sent := testTransport(t, nil, func(o *Options) { o.MaxAttempts = 3 })
		resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`))
		if err != nil || resp.StatusCode != 429 || sent.count() != 3 {
			t.Fatalf("resp %v, err %v, %d attempts: want the last 429 after 3", resp, err, sent.count())
		}
		readAll(t, resp)
	})
	t.Run("no connection could be made", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		tr, sent := testTransport(t, nil, func(o *Options) { o.MaxAttempts = 3 })
		err = errOf(tr.RoundTrip(post(t, context.Background(), "http://"+addr, `{}`)))
		if err == nil || errors.Is(err, ErrOutcomeUnknown) || sent.count() != 3 {
			t.Fatalf("err %v after %d attempts: want a plain failure after 3", err, sent.count())
		}
	})
	t.Run("the context ended before the first send", func(t *testing.T) {
		srv, s := serve(t, created)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		tr, _ := testTransport(t, nil)
		req := post(t, ctx, srv.URL, `{}`)
		body := &closeCheck{Reader: strings.NewReader("{}")}
		req.Body = body
		err := errOf(tr.RoundTrip(req))
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrOutcomeUnknown) || len(s.requests()) != 0 {
			t.Fatalf("err %v, %d requests", err, len(s.requests()))
		}
		if !body.closed {
			t.Fatal("the request's body was left open")
		}
	})
}

type closeCheck struct {
	io.Reader
	closed bool
}

func (c *closeCheck) Close() error { c.closed = true; return nil }

func unknown(t *testing.T, err error) *UnknownOutcomeError {
	t.Helper()
	var u *UnknownOutcomeError
	if !errors.As(err, &u) || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("err = %v, want an *UnknownOutcomeError", err)
	}
	return u
}

func TestAttemptTimeoutRetriesAndKeepsTheBodyReadable(t *testing.T) {
	// The answer's body is sent only once RoundTrip has returned, and read
	// after the attempt's timeout has passed: it must not end the read.
	release := make(chan struct{})
	late := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		http.NewResponseController(w).Flush()
		<-release
		io.WriteString(w, `{"id":"ch_1"}`)
	}
	srv, s := serve(t, hang, late)
	tr, _ := testTransport(t, nil, func(o *Options) { o.AttemptTimeout = 300 * time.Millisecond; o.MaxAttempts = 20 })
	resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // past the attempt's 300ms, whatever the load
	close(release)
	if body := readAll(t, resp); resp.StatusCode != 201 || !strings.Contains(body, "ch_1") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if n := len(s.requests()); n < 2 {
		t.Fatalf("%d requests, want the timed-out one and a retry", n)
	}
}

func TestOtherMethodsPassThroughOnce(t *testing.T) {
	srv, s := serve(t, answer(503, "busy"), created)
	tr, _ := testTransport(t, nil)
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	got := s.requests()
	if len(got) != 3 || got[0].key != "" {
		t.Fatalf("%+v: want 3 requests, each sent once, without a key", got)
	}
}

func TestOnRetryReportsEachRetry(t *testing.T) {
	srv, _ := serve(t, after("1", problem(409, CodeInProgress)), drop, created)
	var waits []time.Duration
	var retries []Retry
	tr, _ := testTransport(t, &waits, func(o *Options) { o.OnRetry = func(r Retry) { retries = append(retries, r) } })
	req := post(t, context.Background(), srv.URL, `{}`)
	req.Header.Set(HeaderKey, "k1")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if len(retries) != 2 {
		t.Fatalf("%+v", retries)
	}
	r0, r1 := retries[0], retries[1]
	if r0.Key != "k1" || r0.Attempt != 1 || r0.StatusCode != 409 || r0.Code != CodeInProgress || r0.Wait != time.Second {
		t.Fatalf("first retry: %+v", r0)
	}
	if r1.Attempt != 2 || r1.StatusCode != 0 || r1.Err == nil {
		t.Fatalf("second retry: %+v", r1)
	}
}

func TestClientKeepsTheKeyAcrossARedirect(t *testing.T) {
	var mu sync.Mutex
	keys := map[string]string{}
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys[r.URL.Path] = r.Header.Get(HeaderKey)
		mu.Unlock()
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
			return
		}
		created(w, r)
	})
	resp, err := New().Do(post(t, context.Background(), srv.URL+"/old", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if keys["/old"] == "" || keys["/new"] != keys["/old"] {
		t.Fatalf("keys %v: want one key on both", keys)
	}
}

func TestConcurrentOperations(t *testing.T) {
	var mu sync.Mutex
	tried := map[string]bool{}
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		again := tried[r.Header.Get(HeaderKey)]
		tried[r.Header.Get(HeaderKey)] = true
		mu.Unlock()
		if !again {
			answer(503, "busy")(w, r)
			return
		}
		created(w, r)
	})
	tr, sent := testTransport(t, nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`))
			if err != nil {
				t.Error(err)
				return
			}
			readAll(t, resp)
		})
	}
	wg.Wait()
	if sent.count() != 16 || len(tried) != 8 {
		t.Fatalf("%d attempts for %d keys, want 16 for 8", sent.count(), len(tried))
	}
}

// replayed answers status as a stored response: Idempotent-Replayed: true.
func replayed(status int, code string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderReplayed, "true")
		answer(status, code)(w, r)
	}
}

// TestRefusalAfterAnAttemptThatMayHaveActedIsAnUnknownOutcome holds the
// package doc's rule: once an attempt may have taken effect, a refusal that
// is not retried says nothing about that attempt (a 401 from an expired
// token, a 404 from a gateway, a 409 from a server that sees the first
// attempt's order), so the operation ends in an *UnknownOutcomeError that
// carries the key and that refusal, not in a plain response.
func TestRefusalAfterAnAttemptThatMayHaveActedIsAnUnknownOutcome(t *testing.T) {
	withHeader := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			h(w, r)
		}
	}
	cases := []struct {
		name    string
		steps   []http.HandlerFunc
		timeout time.Duration // AttemptTimeout
		status  int
		code    string
	}{
		{"502 then 401", []http.HandlerFunc{answer(502, "bad_gateway"), withHeader(answer(401, "unauthenticated"))}, 0, 401, "unauthenticated"},
		{"a dropped connection then 403", []http.HandlerFunc{drop, problem(403, "forbidden")}, 0, 403, "forbidden"},
		{"504 then 404", []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(504) }, answer(404, "not_found")}, 0, 404, "not_found"},
		{"a timed-out attempt then 400", []http.HandlerFunc{hang, answer(400, "invalid_request")}, 200 * time.Millisecond, 400, "invalid_request"},
		{"500 then 409 of another code", []http.HandlerFunc{answer(500, "internal_error"), answer(409, "order_exists")}, 0, 409, "order_exists"},
		{"409 in progress then 413", []http.HandlerFunc{problem(409, CodeInProgress), answer(413, "body_too_large")}, 0, 413, "body_too_large"},
		{"503 then 422 of another code", []http.HandlerFunc{answer(503, "provider_busy"), problem(422, "amount_invalid")}, 0, 422, "amount_invalid"},
		{"503, 429, then 401", []http.HandlerFunc{answer(503, "provider_busy"), answer(429, "rate_limited"), answer(401, "unauthenticated")}, 0, 401, "unauthenticated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, s := serve(t, tc.steps...)
			tr, sent := testTransport(t, nil, func(o *Options) { o.AttemptTimeout = tc.timeout })
			resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("came back as a plain %d after an attempt that may have acted", resp.StatusCode)
			}
			u := unknown(t, err)
			if u.Key == "" || u.Key != s.requests()[0].key || u.Attempts != len(tc.steps) || sent.count() != len(tc.steps) {
				t.Fatalf("%+v after %d attempts: want the key and %d attempts", u, sent.count(), len(tc.steps))
			}
			if u.StatusCode != tc.status || u.Code != tc.code || u.Response == nil || u.Response.StatusCode != tc.status {
				t.Fatalf("%+v: want the last answer, %d %s", u, tc.status, tc.code)
			}
			if body := readAll(t, u.Response); !strings.Contains(body, tc.code) {
				t.Fatalf("the last answer's body %q lacks its code", body)
			}
			if !strings.Contains(err.Error(), tc.code) || !strings.Contains(err.Error(), u.Key) {
				t.Fatalf("the message %q names neither the refusal nor the key", err)
			}
		})
	}
}

// TestUnknownOutcomeAfterARefusalKeepsIt: the refusal that ends an
// operation as unknown comes with it, its headers whole, through Client too.
func TestUnknownOutcomeAfterARefusalKeepsIt(t *testing.T) {
	withHeader := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			h(w, r)
		}
	}
	t.Run("the refusal's headers are kept", func(t *testing.T) {
		srv, _ := serve(t, answer(502, "bad_gateway"), withHeader(answer(401, "unauthenticated")))
		tr, _ := testTransport(t, nil)
		err := errOf(tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`)))
		if u := unknown(t, err); u.Response.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("%+v: the 401's WWW-Authenticate was lost", u.Response.Header)
		}
	})
	t.Run("through Client", func(t *testing.T) {
		srv, _ := serve(t, drop, answer(401, "unauthenticated"))
		c := New(func(o *Options) { o.Base = &http.Transport{DisableKeepAlives: true}; o.MinBackoff = time.Millisecond })
		resp, err := c.Do(post(t, context.Background(), srv.URL, `{}`))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("came back as a plain %d", resp.StatusCode)
		}
		if u := unknown(t, err); u.StatusCode != 401 || u.Key == "" {
			t.Fatalf("%+v", u)
		}
	})
}

// dialFailsFirst is an http.Transport whose first connection is refused.
func dialFailsFirst() *http.Transport {
	var tried atomic.Bool
	return &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !tried.Swap(true) {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused")}
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
}

// TestAnswerAfterAnAttemptThatMayHaveActedComesBack holds the other half
// of the rule: after an attempt that may have acted, the answers that do
// tell the operation's outcome come back as the response (a 2xx, a replay
// of any status, a 422 idempotency_key_reused), and a refusal after
// attempts that cannot have acted (a 429, a connection never made) is the
// server's answer as before.
func TestAnswerAfterAnAttemptThatMayHaveActedComesBack(t *testing.T) {
	seeOther := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderReplayed, "true")
		redirect(http.StatusSeeOther, "/charges/ch_1")(w, r)
	}
	cases := []struct {
		name   string
		steps  []http.HandlerFunc
		dial   bool // the first attempt fails to connect, before steps
		status int
	}{
		{"502 then 201", []http.HandlerFunc{answer(502, "bad_gateway"), created}, false, 201},
		{"a dropped connection then a replayed 201", []http.HandlerFunc{drop, replayed(201, "")}, false, 201},
		{"504 then a replayed 402", []http.HandlerFunc{answer(504, ""), replayed(402, "card_declined")}, false, 402},
		{"a dropped connection then a replayed 409", []http.HandlerFunc{drop, replayed(409, "order_exists")}, false, 409},
		{"502 then 422 idempotency_key_reused", []http.HandlerFunc{answer(502, "bad_gateway"), problem(422, "idempotency_key_reused")}, false, 422},
		{"503 then a replayed 303", []http.HandlerFunc{answer(503, "provider_busy"), seeOther}, false, 303},
		{"429 then 401", []http.HandlerFunc{answer(429, "rate_limited"), answer(401, "unauthenticated")}, false, 401},
		{"a connection never made then 403", []http.HandlerFunc{problem(403, "forbidden")}, true, 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := serve(t, tc.steps...)
			tr, _ := testTransport(t, nil)
			if tc.dial {
				tr.o.Base = dialFailsFirst()
			}
			resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`))
			if err != nil {
				t.Fatalf("err %v, want the %d", err, tc.status)
			}
			readAll(t, resp)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}
