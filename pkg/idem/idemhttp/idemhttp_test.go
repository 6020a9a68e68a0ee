package idemhttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// Wrap's own cases: the handler's writes commit with its response, the
// ServeMux pattern's path values are part of the request, the body can be
// read raw again, cookies are not replayed, and a 5xx is not stored.
func TestWrapOnServeMux(t *testing.T) {
	f := testbed.New(t)
	var runs atomic.Int32
	h := idemhttp.Wrap(f.Store, nil, func(ctx context.Context, req idemhttp.Request[http.Request, struct{}], tx *idem.Tx) (idem.Response, error) {
		runs.Add(1)
		r := req.Event
		if r.URL.Query().Get("fail") != "" {
			return idem.Response{StatusCode: http.StatusBadGateway, Body: []byte("upstream down")}, nil
		}
		tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(f.Business), Item: map[string]types.AttributeValue{
			"scope": &types.AttributeValueMemberS{Value: req.Scope}, "order_id": &types.AttributeValueMemberS{Value: r.PathValue("id")},
		}}}, nil)
		b, _ := io.ReadAll(r.Body)
		return idem.Response{StatusCode: 201, Cookies: []string{"a=1", "b=2"}, Body: []byte("shipped " + r.PathValue("id") + " " + string(b))}, nil
	}, func(o *idemhttp.Options[http.Request]) { o.Scope = func(*http.Request) string { return "alice" } })
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/ship", h)
	send := func(path, key, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set(idemhttp.HeaderIdempotencyKey, key)
		r.Header.Set("Content-Type", "text/plain")
		mux.ServeHTTP(rec, r)
		return rec
	}
	first := send("/orders/o1/ship", "k1", "fast")
	again := send("/orders/o1/ship", "k1", "fast")
	if first.Code != 201 || again.Body.String() != "shipped o1 fast" || again.Header().Get(idemhttp.HeaderReplayed) != "true" || runs.Load() != 1 || f.Order("alice", "o1") == nil {
		t.Fatalf("first %d %q, replay %d %q %v after %d runs", first.Code, first.Body, again.Code, again.Body, again.Header(), runs.Load())
	}
	if c := first.Header().Values("Set-Cookie"); len(c) != 2 || c[0] != "a=1" || c[1] != "b=2" {
		t.Fatalf("the first answer's cookies = %v", c)
	}
	if c := again.Header().Values("Set-Cookie"); len(c) != 0 {
		t.Fatalf("replayed cookies = %v, want none", c)
	}
	if other := send("/orders/o2/ship", "k1", "fast"); other.Code != 422 {
		t.Fatalf("another path value under the key = %d, want 422", other.Code)
	}
	if failed := send("/orders/o3/ship?fail=1", "k2", ""); failed.Code != 502 || f.Order("alice", "o3") != nil {
		t.Fatalf("a 5xx = %d", failed.Code)
	}
	if retried := send("/orders/o3/ship?fail=1", "k2", ""); retried.Code != 502 || retried.Header().Get(idemhttp.HeaderReplayed) != "" || runs.Load() != 3 {
		t.Fatalf("the 5xx's retry = %d %v after %d runs, want the handler run again", retried.Code, retried.Header(), runs.Load())
	}
}

// Without Options.Scope net/http has no verified identity: every request
// is 401, and nothing runs.
func TestWrapWithoutAScopeIsUnauthenticated(t *testing.T) {
	f := testbed.New(t)
	h := idemhttp.Wrap(f.Store, nil, func(context.Context, idemhttp.Request[http.Request, struct{}], *idem.Tx) (idem.Response, error) {
		t.Error("the handler ran")
		return idem.Response{StatusCode: 201}, nil
	})
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/orders", strings.NewReader(`{}`))
	r.Header.Set(idemhttp.HeaderIdempotencyKey, "k1")
	h.ServeHTTP(rec, r)
	if rec.Code != 401 || f.DB.Total() != 0 {
		t.Fatalf("%d after %d DynamoDB calls, want 401 and none", rec.Code, f.DB.Total())
	}
}

// The handler's request carries the work's context, whose deadline is the
// lease's less the commit's reserve, as ctx is: r.Context() is no way
// around the lease.
func TestTheRequestCarriesTheWorksContext(t *testing.T) {
	f := testbed.New(t)
	h := idemhttp.Wrap(f.Store, nil, func(ctx context.Context, req idemhttp.Request[http.Request, struct{}], tx *idem.Tx) (idem.Response, error) {
		want, ok := ctx.Deadline()
		got, has := req.Event.Context().Deadline()
		if !ok || !has || !got.Equal(want) {
			return idem.Response{StatusCode: 500}, nil
		}
		return idem.Response{StatusCode: 201}, nil
	}, func(o *idemhttp.Options[http.Request]) { o.Scope = func(*http.Request) string { return "alice" } })
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/orders", strings.NewReader(`{}`))
	r.Header.Set(idemhttp.HeaderIdempotencyKey, "k1")
	h.ServeHTTP(rec, r)
	if rec.Code != 201 {
		t.Fatalf("%d: the request's context has not the work's deadline", rec.Code)
	}
}

// A typed nil *Refusal refuses nothing and says so; a Refusal reads as its
// code and message.
func TestARefusalReadsAsItsCodeAndMessage(t *testing.T) {
	if got := (&idemhttp.Refusal{StatusCode: 409, Code: "order_taken", Message: "the order exists"}).Error(); got != "order_taken: the order exists" {
		t.Errorf("Error() = %q", got)
	}
	if got := (*idemhttp.Refusal)(nil).Error(); got != "no refusal" {
		t.Errorf("a nil Refusal's Error() = %q, want \"no refusal\"", got)
	}
}
