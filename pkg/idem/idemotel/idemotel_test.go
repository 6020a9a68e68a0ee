package idemotel_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemotel"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
	"github.com/idemkeys/idem/pkg/idemtest"
)

func TestMain(m *testing.M) { os.Exit(idemtest.Main(m)) }

func newMetrics(t *testing.T) (*idemotel.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	m, err := idemotel.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	return m, reader
}

// point is one series of an instrument: its count (a counter's value, a
// histogram's count) and its sum.
type point struct {
	count int64
	sum   float64
}

// collect reads every series of every instrument, by instrument and by
// "path/outcome" ("/outcome" for none).
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[string]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]point{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/idemkeys/idem/pkg/idem/idemotel" {
			t.Fatalf("instrumentation scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = map[string]point{}
			name := func(set attribute.Set) string {
				path, _ := set.Value("idem.path")
				outcome, _ := set.Value("idem.outcome")
				return path.AsString() + "/" + outcome.AsString()
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name][name(p.Attributes)] = point{p.Value, float64(p.Value)}
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out[m.Name][name(p.Attributes)] = point{int64(p.Count), float64(p.Sum)} //nolint:gosec // G115: a count of a test's few calls
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name][name(p.Attributes)] = point{int64(p.Count), p.Sum} //nolint:gosec // G115: a count of a test's few calls
				}
			default:
				t.Fatalf("%s: data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func ok(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
	return idem.Response{StatusCode: 201, Body: []byte(`{"ok":true}`)}, nil
}

// A Store with idemotel's Metrics, on DynamoDB Local, counts each call by
// path and outcome, with its duration, the DynamoDB calls it sent (2 for
// Do's first request, 1 for a replay and DoAtomic's first, 0 from the
// cache) and, for the calls that held one, the lease it held.
func TestMetricsCountEachCallByPathAndOutcome(t *testing.T) {
	m, reader := newMetrics(t)
	f := testbed.New(t, func(o *idem.Options) { o.Metrics = m; o.Cache = idem.CacheOptions{MaxEntries: 10, MaxBytes: 1 << 20} })
	ctx := context.Background()
	r := testbed.Req("alice", "k1", `{"a":1}`)
	slow := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		f.Clock.Advance(250 * time.Millisecond) // the lease time it holds
		return ok(ctx, tx)
	}
	if _, err := f.Store.Do(ctx, r, slow); err != nil {
		t.Fatal(err)
	}
	if _, err := f.NewStore(func(o *idem.Options) { o.Metrics = m }).Do(ctx, r, ok); err != nil { // no cache: the table's replay
		t.Fatal(err)
	}
	if _, err := f.Store.DoAtomic(ctx, r, ok); err != nil { // from the cache
		t.Fatal(err)
	}
	if _, err := f.Store.DoAtomic(ctx, testbed.Req("alice", "k2", `{}`), ok); err != nil {
		t.Fatal(err)
	}
	if _, err := f.NewStore(func(o *idem.Options) { o.Metrics = m }).Do(ctx, testbed.Req("alice", "k1", `{"a":2}`), ok); !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("err = %v, want the 422", err)
	}
	failing := func(context.Context, *idem.Tx) (idem.Response, error) {
		f.Clock.Advance(100 * time.Millisecond)
		return idem.Response{}, errors.New("down")
	}
	if _, err := f.Store.Do(ctx, testbed.Req("alice", "k3", `{}`), failing); err == nil {
		t.Fatal("the failing work succeeded")
	}
	got := collect(t, reader)
	want := map[string]map[string]int64{
		// the number of calls per series, in each instrument
		"idem.calls":          {"do/executed": 1, "do/replayed": 1, "atomic/cache_hit": 1, "atomic/executed": 1, "do/mismatch": 1, "do/lapsed": 1},
		"idem.call.duration":  {"do/executed": 1, "do/replayed": 1, "atomic/cache_hit": 1, "atomic/executed": 1, "do/mismatch": 1, "do/lapsed": 1},
		"idem.dynamodb.calls": {"do/executed": 1, "do/replayed": 1, "atomic/cache_hit": 1, "atomic/executed": 1, "do/mismatch": 1, "do/lapsed": 1},
		"idem.lease.used":     {"do/executed": 1, "do/lapsed": 1},
	}
	for name, series := range want {
		if len(got[name]) != len(series) {
			t.Errorf("%s: series %v, want %v", name, got[name], series)
		}
		for s, n := range series {
			if got[name][s].count != n {
				t.Errorf("%s %s: count %d, want %d", name, s, got[name][s].count, n)
			}
		}
	}
	calls := map[string]float64{"do/executed": 2, "do/replayed": 1, "atomic/cache_hit": 0, "atomic/executed": 1, "do/mismatch": 1, "do/lapsed": 2}
	for s, n := range calls {
		if got["idem.dynamodb.calls"][s].sum != n {
			t.Errorf("idem.dynamodb.calls %s: %v DynamoDB calls, want %v", s, got["idem.dynamodb.calls"][s].sum, n)
		}
	}
	if l := got["idem.lease.used"]; l["do/executed"].sum != 0.25 || l["do/lapsed"].sum != 0.1 {
		t.Errorf("idem.lease.used %v, want 0.25s executed and 0.1s lapsed", l)
	}
	for s, p := range got["idem.call.duration"] {
		if p.sum <= 0 || p.sum > 10 {
			t.Errorf("idem.call.duration %s: %vs", s, p.sum)
		}
	}
}

// Observe, for a caller that has only the outcome, counts it without a
// path, with the lease it held.
func TestObserveCountsTheOutcomeAlone(t *testing.T) {
	m, reader := newMetrics(t)
	m.Observe(idem.OutcomeFenced, 1500*time.Millisecond)
	m.Observe(idem.OutcomeReplayed, 0)
	got := collect(t, reader)
	if got["idem.calls"]["/fenced"].count != 1 || got["idem.calls"]["/replayed"].count != 1 || len(got["idem.calls"]) != 2 {
		t.Errorf("idem.calls %v, want one fenced and one replayed, no path", got["idem.calls"])
	}
	if p := got["idem.lease.used"]; len(p) != 1 || p["/fenced"].sum != 1.5 {
		t.Errorf("idem.lease.used %v, want the fenced call's 1.5s alone", p)
	}
	if len(got["idem.call.duration"]) != 0 || len(got["idem.dynamodb.calls"]) != 0 {
		t.Errorf("a duration or calls without the call's own: %v, %v", got["idem.call.duration"], got["idem.dynamodb.calls"])
	}
}

// A call's measurements allocate nothing in idemotel: on a no-op meter
// provider, an observation of each outcome and path allocates nothing.
// (The SDK's own allocations are its own: reported, not held.)
func TestObservationsAllocateNothingHere(t *testing.T) {
	m, err := idemotel.NewMetrics(noop.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	obs := idem.Observation{Path: "do", Outcome: idem.OutcomeExecuted, Duration: 12 * time.Millisecond, LeaseUsed: 9 * time.Millisecond, Calls: 2}
	for _, o := range []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeCacheHit, idem.OutcomeLapsed} {
		obs.Outcome = o
		if n := testing.AllocsPerRun(100, func() { m.ObserveCall(obs) }); n != 0 {
			t.Errorf("ObserveCall(%v) allocates %v times", o, n)
		}
	}
	sdk, _ := newMetrics(t)
	t.Logf("ObserveCall on the SDK: %v allocations", testing.AllocsPerRun(100, func() { sdk.ObserveCall(obs) }))
}
