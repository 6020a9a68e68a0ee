package idem_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// TestCostPerRequest prices each outcome in DynamoDB calls (asserted: they
// are exact) and capacity units (computed by DynamoDB's rules, printed for
// BENCHMARKS.md). The work writes one order item, as POST /orders does.
func TestCostPerRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("the cost measurement: go test -run TestCostPerRequest")
	}
	type outcome struct {
		name  string
		calls int
		setup func(f *fixture, s *idem.Store) (release func())
		req   idem.Request
	}
	same := req("alice", "k1", `{"sku":"tea"}`)
	outcomes := []outcome{
		{"first request", 0, nil, same},
		{"replay", 1, func(f *fixture, s *idem.Store) func() {
			if _, err := f.Store.Do(context.Background(), same, f.createOrder("alice", "o0", nil)); err != nil {
				f.T.Fatal(err)
			}
			return func() {}
		}, same},
		{"409 in progress", 1, func(f *fixture, s *idem.Store) func() { return holdKey(f.T, f.Store, same) }, same},
		{"422 other request", 1, func(f *fixture, s *idem.Store) func() {
			if _, err := f.Store.Do(context.Background(), same, f.createOrder("alice", "o0", nil)); err != nil {
				f.T.Fatal(err)
			}
			return func() {}
		}, req("alice", "k1", `{"sku":"coffee"}`)},
	}
	paths := []struct {
		name       string
		firstCalls int
		do         func(s *idem.Store) func(context.Context, idem.Request, idem.Work) (idem.Result, error)
	}{
		{"Do (claim, then commit)", 2, func(s *idem.Store) func(context.Context, idem.Request, idem.Work) (idem.Result, error) { return s.Do }},
		{"DoAtomic (one transaction)", 1, func(s *idem.Store) func(context.Context, idem.Request, idem.Work) (idem.Result, error) {
			return s.DoAtomic
		}},
	}
	var table strings.Builder
	fmt.Fprintln(&table, "| path | outcome | calls | WCU (DynamoDB's rules) | RCU | GetItem | capacity the engine reported |")
	fmt.Fprintln(&table, "|---|---|---|---|---|---|---|")
	for _, p := range paths {
		for _, o := range outcomes {
			t.Run(p.name+"/"+o.name, func(t *testing.T) {
				f := newFixture(t)
				meter := &testbed.Meter{API: f.Raw}
				counter := &testbed.Counter{API: meter}
				s, err := idem.New(counter, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now })
				if err != nil {
					t.Fatal(err)
				}
				if o.setup != nil {
					defer o.setup(f, s)()
				}
				_, _ = p.do(s)(context.Background(), o.req, f.createOrder("alice", "o1", nil)) // the answer is each outcome's own (a 409, a 422); the calls are what is counted
				want := o.calls
				if want == 0 {
					want = p.firstCalls
				}
				u := meter.Usage()
				if u.Calls != want || counter.Get("GetItem") != 0 {
					t.Fatalf("%d calls %v, want %d and no GetItem", u.Calls, counter.Calls(), want)
				}
				fmt.Fprintf(&table, "| %s | %s | %d | %g | %g | %d | %g |\n", p.name, o.name, u.Calls, u.WCU, u.RCU, counter.Get("GetItem"), u.Reported)
			})
		}
	}
	t.Logf("cost per request:\n%s", table.String())
}
