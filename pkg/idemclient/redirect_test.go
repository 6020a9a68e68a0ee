package idemclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

var signIn = func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	io.WriteString(w, "<html>sign in</html>")
}

// fast is a Client's options for tests: connections not reused, short
// waits.
func fast(o *Options) {
	o.Base = &http.Transport{DisableKeepAlives: true}
	o.MinBackoff, o.MaxBackoff = time.Millisecond, 2*time.Millisecond
}

// TestRedirectElsewhereAfterAnAttemptThatMayHaveActedIsAnUnknownOutcome: a
// 502, then a sign-in redirect from a gateway whose session ran out. The
// redirect says nothing of the 502's attempt, and following it as a GET
// would hand back the sign-in page as if it were the answer.
func TestRedirectElsewhereAfterAnAttemptThatMayHaveActedIsAnUnknownOutcome(t *testing.T) {
	for _, status := range []int{300, 301, 302, 303, 304} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			for _, via := range []string{"Client", "an http.Client of the caller's"} {
				srv, s := serve(t, answer(502, "bad_gateway"), redirect(status, "/signin"), signIn)
				do := New(fast).Do
				if via != "Client" {
					tr, _ := testTransport(t, nil)
					do = (&http.Client{Transport: tr}).Do
				}
				resp, err := do(post(t, context.Background(), srv.URL+"/charges", `{}`))
				if err == nil {
					resp.Body.Close()
					t.Fatalf("%s: a plain %d, want an unknown outcome", via, resp.StatusCode)
				}
				got := s.requests()
				if u := unknown(t, err); u.StatusCode != status || u.Key != got[0].key || u.Attempts != 2 || len(got) != 2 {
					t.Fatalf("%s: %+v after %+v: want the %d, the key, and no GET of the sign-in page", via, u, got, status)
				}
			}
		})
	}
}

// TestRedirectAsAGetAnsweredFirstIsTheAnswer: a 301, 302 or 303 that
// follows only attempts that cannot have acted, or a replayed one, is the
// server's answer: Client hands it back as it is, with its Location, and
// sends no GET (whose answer, a sign-in page's 200 say, would not be the
// operation's). An http.Client of the caller's follows it as a GET, as
// the package doc says.
func TestRedirectAsAGetAnsweredFirstIsTheAnswer(t *testing.T) {
	cases := []struct {
		name  string
		steps []http.HandlerFunc
	}{
		{"a 302 to a sign-in page at once", []http.HandlerFunc{redirect(302, "/signin"), signIn}},
		{"a 301 at once", []http.HandlerFunc{redirect(301, "/charges/ch_1"), created}},
		{"a 303 at once", []http.HandlerFunc{redirect(303, "/charges/ch_1"), created}},
		{"a 429, then a 303", []http.HandlerFunc{answer(429, "rate_limited"), redirect(303, "/charges/ch_1"), created}},
		{"a 502, then a replayed 303", []http.HandlerFunc{answer(502, "bad_gateway"), func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(HeaderReplayed, "true")
			redirect(303, "/charges/ch_1")(w, r)
		}, created}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, s := serve(t, tc.steps...)
			resp, err := New(fast).Do(post(t, context.Background(), srv.URL+"/charges", `{}`))
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			got := s.requests()
			if last := got[len(got)-1]; resp.StatusCode < 301 || resp.StatusCode > 303 || resp.Header.Get("Location") == "" || last.method != http.MethodPost {
				t.Fatalf("%d after %+v: want the redirect itself, with its Location, and no GET", resp.StatusCode, got)
			}
		})
	}
	t.Run("an http.Client of the caller's follows it", func(t *testing.T) {
		srv, s := serve(t, redirect(303, "/charges/ch_1"), created)
		tr, _ := testTransport(t, nil)
		resp, err := (&http.Client{Transport: tr}).Do(post(t, context.Background(), srv.URL+"/charges", `{}`))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		got := s.requests()
		if last := got[len(got)-1]; resp.StatusCode != 201 || last.method != http.MethodGet || last.path != "/charges/ch_1" {
			t.Fatalf("%d after %+v: want the GET of the 303's Location", resp.StatusCode, got)
		}
	})
}

// TestTemporaryRedirectKeepsTheKeyAndWhatMayHaveActed: a 307 or 308 is
// sent again with the same method, body and key, as the same operation:
// behind Client and behind an http.Client of the caller's alike, one with
// a Timeout (which wraps each answer's body) included. An answer after it
// that does not tell the outcome still does not.
func TestTemporaryRedirectKeepsTheKeyAndWhatMayHaveActed(t *testing.T) {
	cases := []struct {
		name    string
		steps   []http.HandlerFunc
		status  int
		unknown bool
	}{
		{"a 502, a 307, then a replayed 201", []http.HandlerFunc{answer(502, "bad_gateway"), redirect(307, "/new"), replayed(201, "")}, 201, false},
		{"a 502, a 308, then a 401", []http.HandlerFunc{answer(502, "bad_gateway"), redirect(308, "/new"), answer(401, "unauthenticated")}, 401, true},
		{"a 502, a 307, then a 302", []http.HandlerFunc{answer(502, "bad_gateway"), redirect(307, "/new"), redirect(302, "/signin"), signIn}, 302, true},
		{"a 307 at once, then a 401", []http.HandlerFunc{redirect(307, "/new"), answer(401, "unauthenticated")}, 401, false},
	}
	for _, tc := range cases {
		for _, via := range []string{"Client", "an http.Client of the caller's", "an http.Client with a Timeout"} {
			t.Run(tc.name+" through "+via, func(t *testing.T) {
				srv, s := serve(t, tc.steps...)
				do := New(fast).Do
				if via != "Client" {
					tr, _ := testTransport(t, nil)
					hc := &http.Client{Transport: tr}
					if strings.Contains(via, "Timeout") {
						hc.Timeout = time.Minute
					}
					do = hc.Do
				}
				resp, err := do(post(t, context.Background(), srv.URL+"/old", `{"amount":100}`))
				got := s.requests()
				last := got[len(got)-1]
				if last.path != "/new" || last.method != http.MethodPost || last.key != got[0].key || last.body != `{"amount":100}` {
					t.Fatalf("%+v: want /new sent the same POST under the same key", got)
				}
				if !tc.unknown {
					if err != nil || resp.StatusCode != tc.status {
						t.Fatalf("resp %v, err %v: want the %d", resp, err, tc.status)
					}
					readAll(t, resp)
					return
				}
				if u := unknown(t, err); u.StatusCode != tc.status || u.Key != got[0].key || u.Attempts != 3 {
					t.Fatalf("%+v: want the %d, the key, 3 attempts", u, tc.status)
				}
			})
		}
	}
}

// TestTemporaryRedirectThatCannotBeFollowedIsAnUnknownOutcome: a 307 or
// 308 tells the outcome only by being followed.
func TestTemporaryRedirectThatCannotBeFollowedIsAnUnknownOutcome(t *testing.T) {
	cases := []struct {
		name   string
		steps  []http.HandlerFunc
		client bool // through Client, not RoundTrip
	}{
		{"no Location", []http.HandlerFunc{answer(502, "bad_gateway"), redirect(307, "")}, false},
		{"a Location that is not a URL", []http.HandlerFunc{answer(502, "bad_gateway"), redirect(308, "http://[::1")}, false},
		{"no Location, through Client", []http.HandlerFunc{answer(502, "bad_gateway"), redirect(307, "")}, true},
		{"a redirect loop, through Client", []http.HandlerFunc{answer(502, "bad_gateway"), redirect(307, "/again")}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, s := serve(t, tc.steps...)
			tr, _ := testTransport(t, nil)
			do := tr.RoundTrip
			if tc.client {
				do = New(fast).Do
			}
			resp, err := do(post(t, context.Background(), srv.URL+"/charges", `{}`))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("a plain %d, want an unknown outcome", resp.StatusCode)
			}
			if u := unknown(t, err); u.StatusCode/100 != 3 || u.Key != s.requests()[0].key || u.Attempts != len(s.requests()) {
				t.Fatalf("%+v after %d requests: want the 3xx, the key and every attempt", u, len(s.requests()))
			}
		})
	}
	t.Run("the body cannot be given again for the redirect, through Client", func(t *testing.T) {
		srv, s := serve(t, answer(502, "bad_gateway"), redirect(307, "/new"), created)
		req := post(t, context.Background(), srv.URL+"/charges", `{}`)
		calls, getBody := 0, req.GetBody
		req.GetBody = func() (io.ReadCloser, error) {
			if calls++; calls == 2 { // the Transport's retry is the first
				return nil, errors.New("the file was removed")
			}
			return getBody()
		}
		err := errOf(New(fast).Do(req))
		if u := unknown(t, err); u.StatusCode != 307 || u.Key != s.requests()[0].key || !strings.Contains(err.Error(), "the file was removed") {
			t.Fatalf("%+v (%v)", u, err)
		}
	})
}

// TestOwnHTTPClientThatStopsARedirectHandsItBack holds what the package
// doc says of an http.Client of the caller's: a 307 or 308 it does not
// follow comes back as its own answer or error, which do not say that the
// outcome is unknown, and Key tells the key to ask again with. Client does
// not have this gap.
func TestOwnHTTPClientThatStopsARedirectHandsItBack(t *testing.T) {
	t.Run("CheckRedirect returns ErrUseLastResponse", func(t *testing.T) {
		srv, s := serve(t, answer(502, "bad_gateway"), redirect(307, "/new"))
		tr, _ := testTransport(t, nil)
		hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := hc.Do(post(t, context.Background(), srv.URL+"/charges", `{}`))
		if err != nil || resp.StatusCode != 307 || Key(resp) != s.requests()[0].key {
			t.Fatalf("resp %v, err %v: want the 307 handed back, with its key", resp, err)
		}
		readAll(t, resp)
	})
	t.Run("ten redirects", func(t *testing.T) {
		srv, s := serve(t, answer(502, "bad_gateway"), redirect(307, "/again"))
		tr, _ := testTransport(t, nil)
		resp, err := (&http.Client{Transport: tr}).Do(post(t, context.Background(), srv.URL+"/charges", `{}`))
		if err == nil || errors.Is(err, ErrOutcomeUnknown) || !strings.Contains(err.Error(), "stopped after 10 redirects") {
			t.Fatalf("err %v: want the http.Client's own error", err)
		}
		if resp == nil || resp.StatusCode != 307 || Key(resp) != s.requests()[0].key {
			t.Fatalf("resp %v: want the last 307, with the key", resp)
		}
		resp.Body.Close() // closed already by the http.Client, as its doc says: closing again is harmless
	})
}
