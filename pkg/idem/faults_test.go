package idem_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// TestDynamoDBFaults runs operations through a proxy that injects faults
// between the SDK and the engine, and checks that what is safe to retry is
// retried, what is not surfaces as an error, the work never runs twice for
// one commit, and a completed response is never lost.
func TestDynamoDBFaults(t *testing.T) {
	cases := []struct {
		name   string
		faults []faultproxy.Fault
		// want: the first Do succeeds; else it fails and a retry succeeds.
		firstOK bool
		runs    int32 // times the work ran across the first call and the retry
	}{
		{"throttled claim, retried by the SDK", []faultproxy.Fault{{Op: "PutItem", Kind: faultproxy.Throttle, Times: 2}}, true, 1},
		{"5xx on the commit, retried by the SDK", []faultproxy.Fault{{Op: "TransactWriteItems", Kind: faultproxy.ServerError}}, true, 1},
		{"latency on every call", []faultproxy.Fault{{Kind: faultproxy.Latency, Delay: 200 * time.Millisecond, Times: 10}}, true, 1},
		{"connection reset before the commit, every attempt", []faultproxy.Fault{{Op: "TransactWriteItems", Kind: faultproxy.ResetBefore, Times: 3}}, false, 2},
		{"the commit landed, its answer was dropped", []faultproxy.Fault{{Op: "TransactWriteItems", Kind: faultproxy.CommitThenDrop}}, true, 1},
		{"the commit landed, every answer dropped", []faultproxy.Fault{{Op: "TransactWriteItems", Kind: faultproxy.CommitThenDrop, Times: 3}}, true, 1},
		{"throttled past the SDK's retries", []faultproxy.Fault{{Op: "PutItem", Kind: faultproxy.Throttle, Times: 3}}, false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			proxy, store := f.proxied()
			for _, fault := range tc.faults {
				proxy.Inject(fault)
			}
			var runs atomic.Int32
			r := req("alice", "k1", `{}`)
			first, err := store.Do(context.Background(), r, f.createOrder("alice", "o1", &runs))
			if (err == nil) != tc.firstOK {
				t.Fatalf("first call: %+v, %v; want success=%v", first, err, tc.firstOK)
			}
			if err != nil && errors.Is(err, idem.ErrLeaseLost) {
				t.Fatalf("a fault was reported as a takeover: %v", err)
			}
			// The client retries with the same key, the faults spent.
			again, err := store.Do(context.Background(), r, f.createOrder("alice", "o1", &runs))
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if tc.firstOK && (!again.Replayed || string(again.Response.Body) != string(first.Response.Body)) {
				t.Fatalf("retry = %+v, want the first response replayed", again)
			}
			if runs.Load() != tc.runs {
				t.Fatalf("the work ran %d times, want %d", runs.Load(), tc.runs)
			}
			if f.Order("alice", "o1") == nil {
				t.Fatal("the business write is missing")
			}
			for _, fault := range tc.faults {
				if proxy.Injected(fault.Kind) == 0 {
					t.Fatalf("fault %+v was never injected: the case tests nothing", fault)
				}
			}
		})
	}
}
