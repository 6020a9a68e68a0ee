package idemclient

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTheTenthRedirectIsRefused: Client stops a redirect loop where an
// http.Client's default CheckRedirect does, at ten requests (the first and
// nine redirects followed), whether or not an attempt before the loop may
// have acted: a Client that followed one more would send the operation to
// one more place than the caller's own http.Client over a Transport.
func TestTheTenthRedirectIsRefused(t *testing.T) {
	cases := []struct {
		name    string
		steps   []http.HandlerFunc
		unknown bool // the outcome is unknown, not a plain failure
	}{
		{"no attempt may have acted", []http.HandlerFunc{redirect(307, "/again")}, false},
		{"after a 502", []http.HandlerFunc{answer(502, "bad_gateway"), redirect(307, "/again")}, true},
	}
	// followed counts the requests that followed a redirect.
	followed := func(s *script) int {
		n := 0
		for _, r := range s.requests() {
			if r.path == "/again" {
				n++
			}
		}
		return n
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, s := serve(t, tc.steps...)
			err := errOf(New(fast).Do(post(t, context.Background(), srv.URL+"/charges", `{}`)))
			if errors.Is(err, ErrOutcomeUnknown) != tc.unknown || !strings.Contains(err.Error(), "stopped after 10 redirects") {
				t.Fatalf("err %v: want the http.Client's stop, as an unknown outcome: %v", err, tc.unknown)
			}
			if n := followed(s); n != 9 {
				t.Fatalf("Client followed %d redirects, want 9: the tenth request's redirect is refused", n)
			}
			own, o := serve(t, tc.steps...)
			tr, _ := testTransport(t, nil)
			_ = errOf((&http.Client{Transport: tr}).Do(post(t, context.Background(), own.URL+"/charges", `{}`)))
			if followed(s) != followed(o) {
				t.Fatalf("Client followed %d redirects, an http.Client with the default CheckRedirect %d", followed(s), followed(o))
			}
		})
	}
}

// TestTheDefaultPolicy holds the defaults that Options documents: eight
// attempts, and, when the server names no wait, a wait after attempt n of
// between half and all of min(5s, 100ms·2ⁿ⁻¹). The waits are recorded,
// not slept.
func TestTheDefaultPolicy(t *testing.T) {
	srv, _ := serve(t, answer(503, "provider_busy"))
	var waits []time.Duration
	tr, sent := testTransport(t, &waits, func(o *Options) {
		// testTransport shortens the backoff; put back what NewTransport
		// gives a caller who sets none.
		d := NewTransport().o
		o.MinBackoff, o.MaxBackoff = d.MinBackoff, d.MaxBackoff
	})
	err := errOf(tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`)))
	if u := unknown(t, err); u.Attempts != 8 || sent.count() != 8 {
		t.Fatalf("%+v after %d attempts: want the retries to end at 8", u, sent.count())
	}
	if len(waits) != 7 {
		t.Fatalf("waits %v: want one before each of the 7 retries", waits)
	}
	for i, w := range waits {
		step := min(5*time.Second, 100*time.Millisecond<<i) // after attempt i+1
		if w < step/2 || w > step {
			t.Errorf("wait after attempt %d: %v, want within [%v, %v]", i+1, w, step/2, step)
		}
	}
}

// TestRetryAfterOfExactlyTheCapIsHonoured: MaxRetryAfter (a minute by
// default) is the longest Retry-After the client waits out, so a server
// that asks for exactly that is waited for; a second more ends the
// retries, with the Retry-After in the unknown outcome (a 503 may have
// acted).
func TestRetryAfterOfExactlyTheCapIsHonoured(t *testing.T) {
	cases := []struct {
		asked  time.Duration // sent as Retry-After in seconds
		waited bool
	}{
		{time.Minute, true},
		{time.Minute + time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.asked.String(), func(t *testing.T) {
			asked := tc.asked
			srv, s := serve(t, after(strconv.Itoa(int(asked/time.Second)), answer(503, "provider_busy")), created)
			var waits []time.Duration
			tr, _ := testTransport(t, &waits)
			resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL, `{}`))
			if tc.waited {
				if err != nil {
					t.Fatalf("err %v: want the %v waited out", err, asked)
				}
				readAll(t, resp)
				if resp.StatusCode != 201 || len(waits) != 1 || waits[0] != asked {
					t.Fatalf("status %d after waits %v: want 201 after [%v]", resp.StatusCode, waits, asked)
				}
				return
			}
			err = errOf(resp, err)
			if u := unknown(t, err); u.RetryAfter != asked || u.Attempts != 1 || len(waits) != 0 || len(s.requests()) != 1 {
				t.Fatalf("%+v after waits %v: want the retries ended at the first answer, with its Retry-After", u, waits)
			}
		})
	}
}
