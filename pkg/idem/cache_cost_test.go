package idem_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
)

// TestCacheReplayCost measures a replay through Do with the execution
// environment's cache and without it, on the local engine, in the same
// rounds (the order alternating), and asserts the calls: none from the
// cache, one conditional PutItem without it. The times are reported as how
// many times faster the cached replay was in each round, never asserted. make test runs it
// small; make bench runs CACHE_REPLAYS=2000 and writes BENCH_OUT.
func TestCacheReplayCost(t *testing.T) {
	if testing.Short() {
		t.Skip("the cache's cost measurement: go test -run TestCacheReplayCost")
	}
	n := envInt("CACHE_REPLAYS", 100)
	rounds := envInt("CACHE_ROUNDS", 5)
	f := newFixture(t)
	ctx := context.Background()
	r := req("alice", "k-replay", `{"sku":"tea"}`)
	stores := map[string]*idem.Store{"without the cache": f.Store, "with the cache": f.NewStore(withCache(1000, 1<<20))}
	names := []string{"without the cache", "with the cache"}
	for _, name := range names { // the first request, then one replay that fills the cache
		for range 2 {
			if _, err := stores[name].Do(ctx, r, ok201("order")); err != nil {
				t.Fatal(err)
			}
		}
	}
	perReplay := map[string][]float64{}
	calls := map[string]int{}
	var speedups []float64
	for round := range rounds {
		order := names
		if round%2 == 1 {
			order = []string{names[1], names[0]}
		}
		took := map[string]float64{}
		for _, name := range order {
			f.DB.Reset()
			start := time.Now()
			for range n {
				res, err := stores[name].Do(ctx, r, ok201("again"))
				if err != nil || !res.Replayed || string(res.Response.Body) != "order" {
					t.Fatalf("%s: replay = %+v, %v; want the stored response", name, res, err)
				}
			}
			took[name] = float64(time.Since(start).Nanoseconds()) / 1e3 / float64(n)
			perReplay[name] = append(perReplay[name], took[name])
			calls[name] += f.DB.Total()
		}
		speedups = append(speedups, took["without the cache"]/took["with the cache"])
	}
	if got := calls["with the cache"]; got != 0 {
		t.Errorf("replays from the cache made %d DynamoDB calls, want 0", got)
	}
	if got, want := calls["without the cache"], n*rounds; got != want {
		t.Errorf("replays without the cache made %d DynamoDB calls, want %d (one PutItem each)", got, want)
	}
	var report strings.Builder
	fmt.Fprintf(&report, "A replay through Do, %d per case and round, %d rounds (the order alternating), on DynamoDB Local 3.3.1:\n\n", n, rounds)
	fmt.Fprintln(&report, "| replay | DynamoDB calls per replay | µs per replay (median over rounds) | times faster than without the cache (median, min–max over rounds) |")
	fmt.Fprintln(&report, "|---|---|---|---|")
	for _, name := range names {
		faster := "1"
		if name == "with the cache" {
			faster = fmt.Sprintf("%.0f× (%.0f–%.0f)", median(speedups), slices.Min(speedups), slices.Max(speedups))
		}
		fmt.Fprintf(&report, "| %s | %g | %.2f | %s |\n", name, float64(calls[name])/float64(n*rounds), median(perReplay[name]), faster)
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
