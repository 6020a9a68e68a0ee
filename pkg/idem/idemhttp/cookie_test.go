package idemhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// TestWrapNeverReplaysSetCookie: through Wrap, on Do and DoAtomic, for a
// 2xx and a stored 4xx, the first answer carries the handler's cookies
// (Response.Cookies and a Set-Cookie header alike); the record keeps
// none, and no replay sends one, from the table or from Options.Cache.
func TestWrapNeverReplaysSetCookie(t *testing.T) {
	for _, doAtomic := range []bool{false, true} {
		for _, status := range []int{201, 402} {
			f := testbed.New(t)
			var runs atomic.Int32
			h := func(ctx context.Context, req idemhttp.Request[http.Request, struct{}], tx *idem.Tx) (idem.Response, error) {
				runs.Add(1)
				return idem.Response{
					StatusCode: status,
					Header:     map[string]string{"set-cookie": "h=1; HttpOnly", "X-Kept": "yes"},
					Cookies:    []string{"session=s1; HttpOnly", "csrf=c1"},
					Body:       []byte("done"),
				}, nil
			}
			opts := func(o *idemhttp.Options[http.Request]) {
				o.Scope = func(*http.Request) string { return "alice" }
				o.Atomic = doAtomic
			}
			plain := idemhttp.Wrap(f.Store, nil, h, opts)
			cached := idemhttp.Wrap(f.NewStore(func(o *idem.Options) { o.Cache = idem.CacheOptions{MaxEntries: 10, MaxBytes: 1 << 16} }), nil, h, opts)
			send := func(w http.Handler) *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				r := httptest.NewRequest("POST", "/orders", strings.NewReader(`{}`))
				r.Header.Set(idemhttp.HeaderIdempotencyKey, "k1")
				w.ServeHTTP(rec, r)
				return rec
			}
			first := send(plain)
			if c := first.Header().Values("Set-Cookie"); first.Code != status || !slices.Equal(c, []string{"h=1; HttpOnly", "session=s1; HttpOnly", "csrf=c1"}) {
				t.Fatalf("atomic %v: first answer %d with cookies %q, want %d and the handler's three", doAtomic, first.Code, c, status)
			}
			stored := f.Record("alice", "k1")["response"].(*types.AttributeValueMemberM).Value
			if _, ok := stored["cookies"]; ok || len(stored["headers"].(*types.AttributeValueMemberM).Value) != 1 {
				t.Fatalf("atomic %v: the record keeps %v, want X-Kept alone and no cookie", doAtomic, stored)
			}
			for i, w := range []http.Handler{plain, cached, cached} {
				again := send(w)
				if c := again.Header().Values("Set-Cookie"); again.Code != status || again.Header().Get(idemhttp.HeaderReplayed) != "true" || len(c) > 0 ||
					again.Header().Get("X-Kept") != "yes" || (!doAtomic && runs.Load() != 1) { // DoAtomic runs the work before it knows
					t.Fatalf("atomic %v: replay %d = %d %v after %d runs, want %d, its headers and no cookie", doAtomic, i, again.Code, again.Header(), runs.Load(), status)
				}
			}
		}
	}
}
