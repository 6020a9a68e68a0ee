package idemhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// echo is a door that answers the body it was given, as the handler read it.
func echo(f *testbed.Fixture, optFns ...func(*idemhttp.Options[http.Request])) http.Handler {
	return idemhttp.Wrap(f.Store, nil, func(_ context.Context, req idemhttp.Request[http.Request, struct{}], _ *idem.Tx) (idem.Response, error) {
		b, err := io.ReadAll(req.Event.Body)
		if err != nil {
			return idem.Response{}, err
		}
		return idem.Response{StatusCode: 201, Body: b}, nil
	}, append([]func(*idemhttp.Options[http.Request]){func(o *idemhttp.Options[http.Request]) {
		o.Scope = func(*http.Request) string { return "alice" }
	}}, optFns...)...)
}

func send(h http.Handler, path, key string, body io.Reader) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", path, body)
	r.Header.Set(idemhttp.HeaderIdempotencyKey, key)
	r.Header.Set("Content-Type", "text/plain")
	h.ServeHTTP(rec, r)
	return rec
}

// A body of exactly MaxBodyBytes reaches the handler whole; one byte more
// is 413 and reaches nothing.
func TestABodyOfTheLimitIsWholeAndOneByteMoreIsRefused(t *testing.T) {
	f := testbed.New(t)
	h := echo(f, func(o *idemhttp.Options[http.Request]) { o.MaxBodyBytes = 8 })
	if rec := send(h, "/orders", "k1", strings.NewReader("12345678")); rec.Code != 201 || rec.Body.String() != "12345678" {
		t.Fatalf("a body of the limit: %d %q, want 201 and every byte", rec.Code, rec.Body)
	}
	if rec := send(h, "/orders", "k2", strings.NewReader("123456789")); rec.Code != 413 {
		t.Fatalf("a byte over: %d %q, want 413", rec.Code, rec.Body)
	}
}

type failingBody struct{}

func (failingBody) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// A body that cannot be read is the client's 400, before anything runs.
func TestABodyThatCannotBeReadIs400(t *testing.T) {
	f := testbed.New(t)
	if rec := send(echo(f), "/orders", "k1", failingBody{}); rec.Code != 400 || !strings.Contains(rec.Body.String(), "invalid_body") {
		t.Fatalf("%d %q, want 400 invalid_body", rec.Code, rec.Body)
	}
}

// Outside a ServeMux pattern the request's path is its route: the key sent
// to another path is another request (422), to the same one a replay.
func TestWithoutAPatternThePathIsTheRoute(t *testing.T) {
	f := testbed.New(t)
	h := echo(f)
	if rec := send(h, "/orders/a", "k1", strings.NewReader("x")); rec.Code != 201 {
		t.Fatalf("first: %d %q", rec.Code, rec.Body)
	}
	if rec := send(h, "/orders/a", "k1", strings.NewReader("x")); rec.Code != 201 || rec.Header().Get(idemhttp.HeaderReplayed) != "true" {
		t.Fatalf("the same path: %d %v, want the replay", rec.Code, rec.Header())
	}
	if rec := send(h, "/orders/b", "k1", strings.NewReader("x")); rec.Code != 422 {
		t.Fatalf("another path: %d %q, want 422", rec.Code, rec.Body)
	}
}

// Every wildcard of a pattern is part of the request, the last as much as
// the first: the key sent with another value in either is 422.
func TestEveryWildcardOfAPatternIsPartOfTheRequest(t *testing.T) {
	f := testbed.New(t)
	mux := http.NewServeMux()
	mux.Handle("POST /a/{x}/b/{y}/{rest...}", echo(f))
	if rec := send(mux, "/a/1/b/2/c/d", "k1", strings.NewReader("x")); rec.Code != 201 {
		t.Fatalf("first: %d %q", rec.Code, rec.Body)
	}
	for _, path := range []string{"/a/9/b/2/c/d", "/a/1/b/9/c/d", "/a/1/b/2/c/e"} {
		if rec := send(mux, path, "k1", strings.NewReader("x")); rec.Code != 422 {
			t.Errorf("%s under the key: %d %q, want 422", path, rec.Code, rec.Body)
		}
	}
}

// Under a subtree pattern (one that ends in "/", "/" itself among them)
// the path beneath it is part of the request: the key sent to another
// resource under the same pattern is 422, never the first one's stored
// answer, and the same path is a replay.
func TestUnderASubtreePatternThePathIsPartOfTheRequest(t *testing.T) {
	for _, pattern := range []string{"POST /orders/", "/", "POST /orders/{id}/"} {
		t.Run(pattern, func(t *testing.T) {
			f := testbed.New(t)
			mux := http.NewServeMux()
			mux.Handle(pattern, echo(f))
			if rec := send(mux, "/orders/1/cancel", "k1", strings.NewReader("x")); rec.Code != 201 {
				t.Fatalf("first: %d %q", rec.Code, rec.Body)
			}
			if rec := send(mux, "/orders/1/cancel", "k1", strings.NewReader("x")); rec.Code != 201 || rec.Header().Get(idemhttp.HeaderReplayed) != "true" {
				t.Fatalf("the same path: %d %v, want the replay", rec.Code, rec.Header())
			}
			if rec := send(mux, "/orders/1/refund", "k1", strings.NewReader("x")); rec.Code != 422 {
				t.Fatalf("another path under the pattern: %d %v %q, want 422", rec.Code, rec.Header(), rec.Body)
			}
		})
	}
}
