package idem_test

import (
	"context"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// spanOfWork is the span the work's context carries.
func spanOfWork(t *testing.T, s *idem.Store, key string) trace.SpanContext {
	t.Helper()
	var sc trace.SpanContext
	_, err := s.Do(context.Background(), req("alice", key, `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		sc = trace.SpanContextFromContext(ctx)
		return idem.Response{StatusCode: 200}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Without Options.TracerProvider a Store traces on the global provider, as
// it is when the call is made: nothing while OpenTelemetry's default is
// there, the SDK's spans once one is set, even after New, another's once
// it takes its place, and nothing again once the default is back.
func TestTheGlobalProviderIsLookedUpPerCall(t *testing.T) {
	s, err := idem.New(testbed.NewMemory(), "trace-table")
	if err != nil {
		t.Fatal(err)
	}
	if sc := spanOfWork(t, s, "k1"); sc.IsValid() {
		t.Fatalf("the work's context carries span %v with no SDK set", sc)
	}
	def := otel.GetTracerProvider()
	// The default given as the option is the global provider too.
	given, err := idem.New(testbed.NewMemory(), "trace-table", func(o *idem.Options) { o.TracerProvider = def })
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(def) })
	for i, s := range []*idem.Store{s, given} {
		sc := spanOfWork(t, s, "k2")
		if ended := rec.Ended(); len(ended) != i+1 || ended[i].Name() != "idem.Do" || ended[i].SpanContext().SpanID() != sc.SpanID() {
			t.Fatalf("store %d: spans %v, the work's %v: want one idem.Do span more, the work's parent", i, ended, sc)
		}
	}
	// Another SDK set in its place gets the next span: the tracer the Store
	// keeps for the provider it last saw is not the new one's.
	next := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(next)))
	if sc := spanOfWork(t, s, "k3"); len(next.Ended()) != 1 || next.Ended()[0].SpanContext().SpanID() != sc.SpanID() || len(rec.Ended()) != 2 {
		t.Fatalf("with another SDK set: %d spans on it, %d on the first; want the work's on the new one", len(next.Ended()), len(rec.Ended()))
	}
	otel.SetTracerProvider(def)
	if sc := spanOfWork(t, s, "k4"); sc.IsValid() || len(rec.Ended()) != 2 || len(next.Ended()) != 1 {
		t.Fatalf("with the default back: the work's span %v, %d and %d spans; want none more", sc, len(rec.Ended()), len(next.Ended()))
	}
}

// A provider that records nothing costs a call nothing: the allocations of
// Do with no provider set (the global default) and with a no-op one are
// those of a Store that had no tracing at all, which TestPathAllocations
// holds to its target.
func TestAProviderThatRecordsNothingCostsNoAllocation(t *testing.T) {
	allocs := func(optFns ...func(*idem.Options)) float64 {
		s, err := idem.New(testbed.NewMemory(), "bench-table", optFns...)
		if err != nil {
			t.Fatal(err)
		}
		fp, _ := idem.Fingerprint("POST", "/orders", []byte(benchBody), true)
		i := 0
		return testing.AllocsPerRun(200, func() {
			i++
			if _, err := s.Do(context.Background(), idem.Request{Scope: "alice", Key: "k" + strconv.Itoa(i), Fingerprint: fp}, benchWork); err != nil {
				t.Fatal(err)
			}
		})
	}
	none := allocs()
	noOp := allocs(func(o *idem.Options) { o.TracerProvider = noop.NewTracerProvider() })
	rec := tracetest.NewSpanRecorder()
	sdk := allocs(func(o *idem.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	})
	if noOp != none {
		t.Errorf("Do allocates %.0f times with a no-op provider, %.0f with none", noOp, none)
	}
	if sdk <= none {
		t.Errorf("Do allocates %.0f times with the SDK recording, %.0f with none: the SDK did not record", sdk, none)
	}
	t.Logf("allocations per first request: %.0f with no provider or a no-op one, %.0f with the SDK recording every call", none, sdk)
}

// Whether a provider starts spans is asked of the provider itself, with a
// probe that no span processor is handed to export: with a sampler that
// records every span, the probe's parent notwithstanding, the only span
// ended is the call's own.
func TestTheProbeOfAProviderIsNeverExported(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	s, err := idem.New(testbed.NewMemory(), "trace-table", func(o *idem.Options) { o.TracerProvider = tp })
	if err != nil {
		t.Fatal(err)
	}
	sc := spanOfWork(t, s, "k1")
	if ended := rec.Ended(); len(ended) != 1 || ended[0].Name() != "idem.Do" || ended[0].SpanContext().SpanID() != sc.SpanID() {
		t.Fatalf("ended spans %v, want the call's idem.Do alone", ended)
	}
}
