package idem_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

// shipTask is a Step Functions task's input: the state machine passes the
// execution's id and the order; a retry of the state sends the same input.
type shipTask struct {
	ExecutionID string `json:"execution_id"`
	OrderID     string `json:"order_id"`
	Items       int    `json:"items"`
	Attempt     int    `json:"attempt"` // changes on every retry: not part of the request
}

type shipped struct {
	TrackingID string `json:"tracking_id"`
	Items      int    `json:"items"`
}

func TestFunctionRunsATypedTaskOnce(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	ship, err := idem.Function(f.store, func(ctx context.Context, in shipTask) (shipped, error) {
		n := runs.Add(1)
		idem.TxFrom(ctx).Add(f.orderPut("shipper", in.OrderID, "shipped"), nil)
		return shipped{TrackingID: "trk-" + in.OrderID + "-" + string(rune('0'+n)), Items: in.Items}, nil
	}, func(o *idem.FunctionOptions[shipTask]) {
		o.Scope = "shipper"
		o.Key = func(in shipTask) string { return in.ExecutionID }
		o.Fingerprint = func(in shipTask) any { return []any{in.OrderID, in.Items} }
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := ship(ctx, shipTask{"exec-1", "o-1", 3, 1})
	if err != nil || first.TrackingID != "trk-o-1-1" || first.Items != 3 || f.order("shipper", "o-1") == nil {
		t.Fatalf("first = %+v %v", first, err)
	}
	again, err := ship(ctx, shipTask{"exec-1", "o-1", 3, 2}) // a retried state: Attempt is outside the fingerprint
	if err != nil || again != first || runs.Load() != 1 {
		t.Fatalf("replay = %+v %v after %d runs, want the first Out decoded", again, err, runs.Load())
	}
	if _, err := ship(ctx, shipTask{"exec-1", "o-2", 3, 1}); !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("another order under the execution id: %v, want ErrFingerprintMismatch", err)
	}
	before := f.items()
	if _, err := ship(ctx, shipTask{"", "o-3", 1, 1}); !errors.Is(err, idem.ErrNoKey) || runs.Load() != 1 || f.items() != before {
		t.Fatalf("no key: %v, %d runs, want ErrNoKey and nothing run or written", err, runs.Load())
	}
}

func TestFunctionPassThroughAndOptions(t *testing.T) {
	f := newFixture(t)
	echo := func(ctx context.Context, in shipTask) (shipped, error) {
		return shipped{TrackingID: "direct", Items: in.Items}, nil
	}
	h, err := idem.Function(f.store, echo, func(o *idem.FunctionOptions[shipTask]) {
		o.Scope, o.PassThrough = "shipper", true
		o.Key = func(in shipTask) string { return in.ExecutionID }
	})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h(context.Background(), shipTask{Items: 2}); err != nil || out.TrackingID != "direct" || f.items() != 0 {
		t.Fatalf("pass-through = %+v %v with %d records", out, err, f.items())
	}
	if _, err := idem.Function(f.store, echo, func(o *idem.FunctionOptions[shipTask]) { o.Scope = "shipper" }); !errors.Is(err, idem.ErrInvalidOptions) {
		t.Fatalf("no Key function: %v, want ErrInvalidOptions", err)
	}
}

// TestFunctionPassThroughCommitsTheHandlersWrites: one handler serves both
// cases. With PassThrough, a keyless event runs the handler with a usable
// Tx whose writes commit in one transaction without an idempotency record,
// and its result is returned; no panic on TxFrom(ctx).Add.
func TestFunctionPassThroughCommitsTheHandlersWrites(t *testing.T) {
	f := newFixture(t)
	ship, err := idem.Function(f.store, func(ctx context.Context, in shipTask) (shipped, error) {
		idem.TxFrom(ctx).Add(f.orderPut("shipper", in.OrderID, "shipped"), nil)
		idem.TxFrom(ctx).Add(f.orderPut("shipper", in.OrderID+"-label", "label"), nil)
		return shipped{TrackingID: "trk-" + in.OrderID, Items: in.Items}, nil
	}, func(o *idem.FunctionOptions[shipTask]) {
		o.Scope, o.PassThrough = "shipper", true
		o.Key = func(in shipTask) string { return in.ExecutionID }
	})
	if err != nil {
		t.Fatal(err)
	}
	var out shipped
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("pass-through panicked: %v", p)
			}
		}()
		out, err = ship(context.Background(), shipTask{OrderID: "o-9", Items: 2})
	}()
	if err != nil || out.TrackingID != "trk-o-9" || f.order("shipper", "o-9") == nil || f.order("shipper", "o-9-label") == nil {
		t.Fatalf("pass-through = %+v, %v; want the result and both writes committed", out, err)
	}
	if f.items() != 0 {
		t.Fatalf("pass-through wrote %d idempotency records, want none", f.items())
	}
	// Its writes are one transaction: a failed condition commits neither.
	if _, err := ship(context.Background(), shipTask{OrderID: "o-9", Items: 2}); !errors.Is(err, idem.ErrWriteConditionFailed) {
		t.Fatalf("the same writes again: %v, want ErrWriteConditionFailed", err)
	}
}

// TestFunctionPassThroughAnswersAsTheKeyedPath: one handler, one behaviour.
// A write whose condition fails with a ConflictFunc gives the conflict's Out
// with and without a key; 101 writes are ErrTooManyWrites before any write
// on the pass-through path too.
func TestFunctionPassThroughAnswersAsTheKeyedPath(t *testing.T) {
	f := newFixture(t)
	if _, err := f.store.Do(context.Background(), req("pre", "k", `{}`), f.createOrder("shipper", "o-1", nil)); err != nil {
		t.Fatal(err)
	}
	many := false
	ship, err := idem.Function(f.store, func(ctx context.Context, in shipTask) (shipped, error) {
		if many {
			for i := range 101 {
				idem.TxFrom(ctx).Add(f.orderPut("shipper", "m"+strings.Repeat("x", i), "n"), nil)
			}
			return shipped{}, nil
		}
		idem.TxFrom(ctx).Add(f.orderPut("shipper", in.OrderID, "again"), func(map[string]types.AttributeValue) (idem.Response, error) {
			return idem.Response{StatusCode: 200, Body: []byte(`{"tracking_id":"already"}`)}, nil
		})
		return shipped{TrackingID: "new"}, nil
	}, func(o *idem.FunctionOptions[shipTask]) {
		o.Scope, o.PassThrough = "shipper", true
		o.Key = func(in shipTask) string { return in.ExecutionID }
	})
	if err != nil {
		t.Fatal(err)
	}
	keyed, kerr := ship(context.Background(), shipTask{ExecutionID: "e1", OrderID: "o-1"})
	free, ferr := ship(context.Background(), shipTask{OrderID: "o-1"})
	if kerr != nil || ferr != nil || keyed.TrackingID != "already" || free != keyed {
		t.Fatalf("keyed %+v %v, pass-through %+v %v; want the conflict's answer both ways", keyed, kerr, free, ferr)
	}
	many = true
	before := f.db.Total()
	if _, err := ship(context.Background(), shipTask{OrderID: "o-2"}); !errors.Is(err, idem.ErrTooManyWrites) || f.db.Total() != before {
		t.Fatalf("101 writes without a key: %v after %d calls; want ErrTooManyWrites before any", err, f.db.Total()-before)
	}
}

// The middleware's own cases: the handler's writes commit with its
// response, the ServeMux pattern's path values are part of the request,
// cookies are replayed, and a 5xx is not stored.
func TestMiddlewareOnServeMux(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	mw := f.store.Middleware(func(o *idem.MiddlewareOptions) { o.Scope = func(*http.Request) string { return "alice" } })
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/ship", mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		if r.URL.Query().Get("fail") != "" {
			http.Error(w, "upstream down", http.StatusBadGateway)
			return
		}
		idem.TxFrom(r.Context()).Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(f.business), Item: map[string]types.AttributeValue{
			"scope": &types.AttributeValueMemberS{Value: "alice"}, "order_id": &types.AttributeValueMemberS{Value: r.PathValue("id")},
		}}}, nil)
		b, _ := io.ReadAll(r.Body)
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.WriteHeader(201)
		io.WriteString(w, "shipped "+r.PathValue("id")+" "+string(b))
	})))
	send := func(path, key, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set("Idempotency-Key", key)
		mux.ServeHTTP(rec, r)
		return rec
	}
	first := send("/orders/o1/ship", "k1", "")
	again := send("/orders/o1/ship", "k1", "")
	if first.Code != 201 || again.Body.String() != "shipped o1 " || again.Header().Get(idem.HeaderReplayed) != "true" || runs.Load() != 1 || f.order("alice", "o1") == nil {
		t.Fatalf("first %d %q, replay %d %q %v after %d runs", first.Code, first.Body, again.Code, again.Body, again.Header(), runs.Load())
	}
	if c := again.Header().Values("Set-Cookie"); len(c) != 2 || c[0] != "a=1" || c[1] != "b=2" {
		t.Fatalf("replayed cookies = %v", c)
	}
	if other := send("/orders/o2/ship", "k1", ""); other.Code != 422 {
		t.Fatalf("another path value under the key = %d, want 422", other.Code)
	}
	if failed := send("/orders/o3/ship?fail=1", "k2", ""); failed.Code != 502 || f.order("alice", "o3") != nil {
		t.Fatalf("a 5xx = %d", failed.Code)
	}
	if retried := send("/orders/o3/ship?fail=1", "k2", ""); retried.Code != 502 || retried.Header().Get(idem.HeaderReplayed) != "" || runs.Load() != 3 {
		t.Fatalf("the 5xx's retry = %d %v after %d runs, want the handler run again", retried.Code, retried.Header(), runs.Load())
	}
}
