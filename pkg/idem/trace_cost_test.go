package idem_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// tracedSDK is the SDK recording every call, each span exported as it
// ends to memory, on the request's goroutine (a syncer): every cost a span
// has is in the request's time, where a batching exporter to a collector
// would move the export to its own goroutine.
func tracedSDK() (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), exp
}

// benchmarkTraced is benchmarkPath (bench_test.go) on a Store that traces
// every call; the exporter is emptied now and then, so that the spans it
// keeps do not grow the heap the benchmark measures.
func benchmarkTraced(b *testing.B, atomic, replay bool) {
	tp, exp := tracedSDK()
	s, err := idem.New(testbed.NewMemory(), "bench-table", func(o *idem.Options) { o.TracerProvider = tp })
	if err != nil {
		b.Fatal(err)
	}
	do := s.Do
	if atomic {
		do = s.DoAtomic
	}
	fp, _ := idem.Fingerprint("POST", "/orders", []byte(benchBody), true)
	ctx := context.Background()
	if replay {
		if _, err := do(ctx, idem.Request{Scope: "alice", Key: "k", Fingerprint: fp}, benchWork); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := "k"
		if !replay {
			key = "k" + strconv.Itoa(i)
		}
		res, err := do(ctx, idem.Request{Scope: "alice", Key: key, Fingerprint: fp}, benchWork)
		if err != nil || res.Replayed != replay {
			b.Fatalf("%+v, %v", res, err)
		}
		if i%1024 == 1023 {
			exp.Reset()
		}
	}
	b.StopTimer()
	if len(exp.GetSpans()) == 0 && b.N%1024 != 0 {
		b.Fatal("no span was exported: the benchmark traced nothing")
	}
}

func BenchmarkFirstRequestTraced(b *testing.B)       { benchmarkTraced(b, false, false) }
func BenchmarkReplayTraced(b *testing.B)             { benchmarkTraced(b, false, true) }
func BenchmarkFirstRequestAtomicTraced(b *testing.B) { benchmarkTraced(b, true, false) }

// TestTracingCost puts each path with every call traced beside the same
// path untraced: in process on the in-memory DynamoDB (testbed.Memory,
// the library's CPU and allocations alone), the two benchmarks alternating
// round by round; then on DynamoDB Local, request by request, beside the
// network's floor. It asserts only that the traced side traced (more
// allocations), never a time. make bench's TRACE_ROUNDS and
// TRACE_REQUESTS make it larger; BENCH_OUT gets the tables.
func TestTracingCost(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement of cost, not a behaviour: not with -short")
	}
	rounds := envInt("TRACE_ROUNDS", 2)
	var report strings.Builder
	fmt.Fprintf(&report, "In process (testbed.Memory), %d rounds, the two sides alternating; the traced side is the SDK recording every call, exported as it ends to memory on the request's goroutine:\n\n", rounds)
	fmt.Fprintln(&report, "| benchmark | untraced µs per op | traced µs per op | added µs | traced over untraced: median (min–max) | allocations untraced | traced | added |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|---|---|")
	for _, c := range []struct {
		name          string
		plain, traced func(*testing.B)
	}{
		{"FirstRequest (Do)", BenchmarkFirstRequest, BenchmarkFirstRequestTraced},
		{"Replay (Do)", BenchmarkReplay, BenchmarkReplayTraced},
		{"FirstRequestAtomic (DoAtomic)", BenchmarkFirstRequestAtomic, BenchmarkFirstRequestAtomicTraced},
	} {
		var plain, traced, ratios []float64
		var plainAllocs, tracedAllocs int64
		for round := range rounds {
			sides := []*[]float64{&plain, &traced}
			benches := []func(*testing.B){c.plain, c.traced}
			if round%2 == 1 {
				sides[0], sides[1], benches[0], benches[1] = sides[1], sides[0], benches[1], benches[0]
			}
			var ns [2]float64
			for i, bench := range benches {
				r := testing.Benchmark(bench)
				if r.N == 0 {
					t.Fatalf("%s did not run", c.name)
				}
				ns[i] = float64(r.NsPerOp())
				*sides[i] = append(*sides[i], ns[i]/1000)
				if sides[i] == &plain {
					plainAllocs = r.AllocsPerOp()
				} else {
					tracedAllocs = r.AllocsPerOp()
				}
			}
			if round%2 == 1 {
				ns[0], ns[1] = ns[1], ns[0]
			}
			ratios = append(ratios, ns[1]/ns[0])
		}
		if tracedAllocs <= plainAllocs {
			t.Errorf("%s: %d allocations traced, %d untraced: the traced side traced nothing", c.name, tracedAllocs, plainAllocs)
		}
		fmt.Fprintf(&report, "| %s | %.1f | %.1f | %.1f | %s | %d | %d | %d |\n", c.name, median(plain), median(traced),
			median(traced)-median(plain), spread(ratios), plainAllocs, tracedAllocs, tracedAllocs-plainAllocs)
	}
	tracingOnTheEngine(t, &report, rounds)
	t.Log("\n" + report.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tracingOnTheEngine is Do's first request on DynamoDB Local, untraced and
// traced, request by request, who goes first alternating: the time a span
// adds beside the two DynamoDB calls it is made of.
func tracingOnTheEngine(t *testing.T, report *strings.Builder, rounds int) {
	n := envInt("TRACE_REQUESTS", 20)
	tp, exp := tracedSDK()
	f := newFixture(t)
	plain := f.NewStore()
	traced := f.NewStore(func(o *idem.Options) { o.TracerProvider = tp })
	var plainNs, tracedNs []int64
	for round := range rounds {
		for i := range n {
			sides := []*idem.Store{plain, traced}
			if (i+round)%2 == 1 {
				sides[0], sides[1] = traced, plain
			}
			for _, s := range sides {
				key := fmt.Sprintf("k-%p-%d-%d", s, round, i)
				start := time.Now()
				if _, err := s.Do(context.Background(), req("alice", key, benchBody), f.createOrder("alice", "o-"+key, nil)); err != nil {
					t.Fatal(err)
				}
				d := time.Since(start).Nanoseconds()
				if s == plain {
					plainNs = append(plainNs, d)
				} else {
					tracedNs = append(tracedNs, d)
				}
			}
		}
	}
	if got := len(exp.GetSpans()); got != rounds*n {
		t.Fatalf("%d spans exported, want %d", got, rounds*n)
	}
	fmt.Fprintf(report, "\nOn DynamoDB Local %s, Do's first request (a claim and a commit with one business write), %d requests per side (%d in each of %d rounds), request by request:\n\n", dynamoLocalVersion, n*rounds, n, rounds)
	fmt.Fprintln(report, "| case | untraced ms per request (median) | traced ms per request (median) | traced over untraced, paired by request: median |")
	fmt.Fprintln(report, "|---|---|---|---|")
	fmt.Fprintf(report, "| Do: first request | %.2f | %.2f | %.2f |\n", float64(median(plainNs))/1e6, float64(median(tracedNs))/1e6, pairedRatio(tracedNs, plainNs))
}
