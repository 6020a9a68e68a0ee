package faultproxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// TestAMatchedFaultActsOnItsOperationAlone: a fault with Match acts only on
// calls whose body holds it, and says so through Reached; HoldAfter lets
// the call land, then holds its answer.
func TestAMatchedFaultActsOnItsOperationAlone(t *testing.T) {
	var landed atomic.Int32
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		landed.Add(1)
		io.WriteString(w, "done")
	}))
	defer engine.Close()
	p, err := faultproxy.New(engine.URL)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	defer front.Close()
	var reached atomic.Int32
	p.Inject(faultproxy.Fault{Op: "PutItem", Kind: faultproxy.Throttle, Match: `"mine"`, Reached: func() { reached.Add(1) }})
	p.Inject(faultproxy.Fault{Op: "PutItem", Kind: faultproxy.HoldAfter, Delay: 300 * time.Millisecond, Match: `"held"`, Reached: func() { reached.Add(1) }})

	send := func(body string) (int, time.Duration) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, front.URL, strings.NewReader(body))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}
	if status, _ := send(`{"key":"mine-too"}`); status != 200 || reached.Load() != 0 {
		t.Fatalf("another operation's call: %d, reached %d times; want it untouched", status, reached.Load())
	}
	if status, _ := send(`{"key":"mine"}`); status != 400 || reached.Load() != 1 {
		t.Fatalf("the operation's call: %d, reached %d times; want it throttled and reached once", status, reached.Load())
	}
	before := landed.Load()
	if status, took := send(`{"key":"held"}`); status != 200 || took < 300*time.Millisecond || landed.Load() != before+1 || reached.Load() != 2 {
		t.Fatalf("the held call: %d after %v, landed %d, reached %d; want it landed once, then answered 200 after the hold", status, took, landed.Load()-before, reached.Load())
	}
}
