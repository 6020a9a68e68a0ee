package idemhttp_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// TestAnIdentityThatIsNotUTF8Is401: behind an auth proxy that writes the
// user's name in a header as Latin-1, "m\xfcller" and "m\xf6ller" are not
// valid UTF-8, and DynamoDB's SDK would write both as "m\uFFFDller": one
// record for both users' keys. Neither can be a scope: over the wire, each
// request is 401 problem details before any DynamoDB call, the handler
// never runs, and the door warns with the cause. The same names in UTF-8
// are two callers, each with its own run.
func TestAnIdentityThatIsNotUTF8Is401(t *testing.T) {
	f := testbed.New(t)
	var log bytes.Buffer
	var runs atomic.Int32
	h := idemhttp.Wrap(f.Store, nil, func(ctx context.Context, req idemhttp.Request[http.Request, struct{}], tx *idem.Tx) (idem.Response, error) {
		runs.Add(1)
		return idem.Response{StatusCode: 201, Body: []byte("made for " + req.Scope)}, nil
	}, func(o *idemhttp.Options[http.Request]) {
		o.Scope = func(r *http.Request) string { return r.Header.Get("X-Authenticated-User") } // set by the proxy alone
		o.Logger = slog.New(slog.NewJSONHandler(&log, nil))
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(user string) (int, string, string) {
		r, err := http.NewRequest("POST", srv.URL+"/orders", strings.NewReader(`{"sku":"tea"}`))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("X-Authenticated-User", user)
		r.Header.Set(idemhttp.HeaderIdempotencyKey, "k1")
		resp, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	for _, user := range []string{"m\xfcller", "m\xf6ller"} {
		status, ct, body := send(user)
		if status != 401 || ct != problemJSON || problemCode(body) != "unauthenticated" || !strings.Contains(body, "UTF-8") {
			t.Fatalf("%q: %d %s %s, want 401 unauthenticated problem details saying why", user, status, ct, body)
		}
	}
	if runs.Load() != 0 || f.DB.Total() != 0 {
		t.Fatalf("the handler ran %d times, DynamoDB calls %v; want none", runs.Load(), f.DB.Calls())
	}
	if !strings.Contains(log.String(), `"level":"WARN"`) || !strings.Contains(log.String(), "not valid UTF-8") {
		t.Fatalf("log %s: want a warning with the cause", log.String())
	}
	for i, user := range []string{"müller", "möller"} {
		if status, _, body := send(user); status != 201 || body != "made for "+user || runs.Load() != int32(i+1) {
			t.Fatalf("%q: %d %q after %d runs, want its own 201", user, status, body, runs.Load())
		}
	}
}
