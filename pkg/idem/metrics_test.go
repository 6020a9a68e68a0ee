package idem_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
)

// recorder is a Metrics that keeps what it was told.
type recorder struct {
	mu   sync.Mutex
	seen []idem.Outcome
	used []time.Duration
}

func (r *recorder) Observe(o idem.Outcome, used time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen, r.used = append(r.seen, o), append(r.used, used)
}

func (r *recorder) last() (idem.Outcome, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		return "", 0
	}
	return r.seen[len(r.seen)-1], r.used[len(r.used)-1]
}

func ok(context.Context, *idem.Tx) (idem.Response, error) {
	return idem.Response{StatusCode: 201, Body: []byte("{}")}, nil
}

func TestMetricsReportEachOutcomeAndTheLeaseTimeUsed(t *testing.T) {
	m := &recorder{}
	f := newFixture(t, func(o *idem.Options) { o.Metrics = m })
	ctx := context.Background()
	r := req("alice", "k1", `{"n":1}`)

	slow := func(context.Context, *idem.Tx) (idem.Response, error) {
		f.Clock.Advance(1500 * time.Millisecond)
		return idem.Response{StatusCode: 201}, nil
	}
	if _, err := f.Store.Do(ctx, r, slow); err != nil {
		t.Fatal(err)
	}
	if o, used := m.last(); o != idem.OutcomeExecuted || used != 1500*time.Millisecond {
		t.Fatalf("first call: %q after %v, want executed after 1.5s", o, used)
	}
	if _, err := f.Store.Do(ctx, r, ok); err != nil {
		t.Fatal(err)
	}
	if o, used := m.last(); o != idem.OutcomeReplayed || used != 0 {
		t.Fatalf("repeat: %q after %v, want replayed, no lease", o, used)
	}
	if _, err := f.Store.Do(ctx, req("alice", "k1", `{"n":2}`), ok); !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatal(err)
	}
	if o, _ := m.last(); o != idem.OutcomeMismatch {
		t.Fatalf("other request: %q, want mismatch", o)
	}

	boom := errors.New("provider down")
	fail := func(context.Context, *idem.Tx) (idem.Response, error) { return idem.Response{}, boom }
	if _, err := f.Store.Do(ctx, req("alice", "k2", `{}`), fail); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if o, _ := m.last(); o != idem.OutcomeLapsed {
		t.Fatalf("failed work: %q, want lapsed", o)
	}
}

func TestMetricsReportInProgressAndFenced(t *testing.T) {
	m := &recorder{}
	f := newFixture(t, func(o *idem.Options) { o.Metrics = m; o.Lease = 10 * time.Second })
	ctx := context.Background()
	r := req("bob", "k1", `{}`)
	other := f.NewStore(func(o *idem.Options) { o.Lease = 10 * time.Second })

	slow := func(context.Context, *idem.Tx) (idem.Response, error) {
		if _, err := other.Do(ctx, r, ok); !errors.Is(err, idem.ErrInProgress) {
			t.Errorf("duplicate under a live lease: %v, want ErrInProgress", err)
		}
		f.Clock.Advance(11 * time.Second) // the lease runs out; a retry takes over and commits
		if _, err := other.Do(ctx, r, ok); err != nil {
			t.Errorf("takeover: %v", err)
		}
		return idem.Response{StatusCode: 201}, nil
	}
	if _, err := f.Store.Do(ctx, r, slow); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("slow holder: %v, want ErrLeaseLost", err)
	}
	if o, used := m.last(); o != idem.OutcomeFenced || used != 11*time.Second {
		t.Fatalf("slow holder: %q after %v, want fenced after 11s", o, used)
	}

	m2 := &recorder{}
	busy := f.NewStore(func(o *idem.Options) { o.Metrics = m2 })
	hold := func(context.Context, *idem.Tx) (idem.Response, error) {
		_, err := busy.Do(ctx, req("bob", "k2", `{}`), ok)
		return idem.Response{StatusCode: 200}, err
	}
	if _, err := f.Store.Do(ctx, req("bob", "k2", `{}`), hold); !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("work that met its own key in progress: %v", err)
	}
	if !slices.Equal(m2.seen, []idem.Outcome{idem.OutcomeInProgress}) {
		t.Fatalf("duplicate: %v, want [in_progress]", m2.seen)
	}
}

// A replay from the cache is reported as a cache hit; a 422 from the cache
// as a mismatch.
func TestMetricsReportCacheHits(t *testing.T) {
	rec := &recorder{}
	f := newFixture(t, withCache(100, 1<<20), func(o *idem.Options) { o.Metrics = rec })
	ctx := context.Background()
	if _, err := f.Store.Do(ctx, req("alice", "k1", `{"a":1}`), ok); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Store.Do(ctx, req("alice", "k1", `{"a":1}`), ok); err != nil {
		t.Fatal(err)
	}
	if o, _ := rec.last(); o != idem.OutcomeCacheHit {
		t.Fatalf("a cached replay reported %q, want %q", o, idem.OutcomeCacheHit)
	}
	if _, err := f.Store.Do(ctx, req("alice", "k1", `{"a":2}`), ok); !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("another body under the key: %v, want ErrFingerprintMismatch", err)
	}
	if o, _ := rec.last(); o != idem.OutcomeMismatch {
		t.Fatalf("a 422 from the cache reported %q, want %q", o, idem.OutcomeMismatch)
	}
}

// callRecorder is a CallObserver: a Store calls its ObserveCall instead
// of Observe.
type callRecorder struct {
	recorder
	calls []idem.Observation
}

var _ idem.CallObserver = (*callRecorder)(nil)

func (r *callRecorder) ObserveCall(o idem.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, o)
}

// ObserveCall is told each call's path, outcome, DynamoDB calls, lease time
// used and duration, as Observation says: 2 calls for Do's first request,
// 1 for DoAtomic's and for a replay from the table, 0 from the cache; the
// lease time as Observe is told it; a duration within the call's own, and
// above zero for a call that went to DynamoDB. Observe is not called.
func TestObserveCallTellsEachCallAsObservationSays(t *testing.T) {
	m := &callRecorder{}
	f := newFixture(t, withCache(100, 1<<20), func(o *idem.Options) { o.Metrics = m })
	ctx := context.Background()
	uncached := f.NewStore(func(o *idem.Options) { o.Metrics = m })
	slow := func(context.Context, *idem.Tx) (idem.Response, error) {
		f.Clock.Advance(1500 * time.Millisecond)
		return idem.Response{StatusCode: 201}, nil
	}
	steps := []struct {
		name string
		call func() error
		want idem.Observation
	}{
		{"Do's first request", func() error { _, err := f.Store.Do(ctx, req("alice", "k1", `{}`), slow); return err },
			idem.Observation{Path: "do", Outcome: idem.OutcomeExecuted, LeaseUsed: 1500 * time.Millisecond, Calls: 2}},
		{"a replay from the table", func() error { _, err := uncached.Do(ctx, req("alice", "k1", `{}`), ok); return err },
			idem.Observation{Path: "do", Outcome: idem.OutcomeReplayed, Calls: 1}},
		{"a replay from the cache", func() error { _, err := f.Store.Do(ctx, req("alice", "k1", `{}`), ok); return err },
			idem.Observation{Path: "do", Outcome: idem.OutcomeCacheHit, Calls: 0}},
		{"DoAtomic's first request", func() error { _, err := f.Store.DoAtomic(ctx, req("alice", "k2", `{}`), ok); return err },
			idem.Observation{Path: "atomic", Outcome: idem.OutcomeExecuted, Calls: 1}},
	}
	for i, s := range steps {
		start := time.Now()
		if err := s.call(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		took := time.Since(start)
		if len(m.calls) != i+1 {
			t.Fatalf("%s: %d observations after %d calls", s.name, len(m.calls), i+1)
		}
		got := m.calls[i]
		if got.Duration < 0 || got.Duration > took || (got.Calls > 0 && got.Duration == 0) {
			t.Errorf("%s: a duration of %v for a call that took %v", s.name, got.Duration, took)
		}
		got.Duration = 0
		if got != s.want {
			t.Errorf("%s: observed %+v, want %+v", s.name, got, s.want)
		}
	}
	if len(m.seen) != 0 {
		t.Errorf("Observe was called too: %v", m.seen)
	}
}
