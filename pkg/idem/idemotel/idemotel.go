// Package idemotel reports pkg/idem's outcomes as OpenTelemetry metrics:
// a Metrics is an idem.Metrics, so that a service on OpenTelemetry needs
// no CloudWatch Embedded Metric Format. The traces are pkg/idem's own
// (idem.Options.TracerProvider).
//
//	m, err := idemotel.NewMetrics(nil) // on otel.GetMeterProvider()
//	store, err := idem.New(db, table, func(o *idem.Options) { o.Metrics = m })
//
// Its instruments, each with the attributes idem.path ("do" for Do,
// "atomic" for DoAtomic) and idem.outcome (an idem.Outcome):
//
//	idem.calls           counter, {call}: one per call that reached an outcome
//	idem.call.duration   histogram, s: from the call's start to its outcome
//	idem.dynamodb.calls  histogram, {call}: the DynamoDB calls each call sent (idem.Observation's Calls)
//	idem.lease.used      histogram, s: the lease time a call held, for those that held one
//
// A call's measurements allocate nothing in this package: the attribute
// set of each path and outcome is made once.
package idemotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemkeys/idem/pkg/idem"
)

// meterName is the instrumentation scope of the instruments.
const meterName = "github.com/idemkeys/idem/pkg/idem/idemotel"

// outcomes are the outcomes a Store reports, whose attribute sets are made
// once.
var outcomes = []idem.Outcome{
	idem.OutcomeExecuted, idem.OutcomeReplayed, idem.OutcomeInProgress, idem.OutcomeMismatch,
	idem.OutcomeFenced, idem.OutcomeLapsed, idem.OutcomeFailed, idem.OutcomeCacheHit,
}

// series is one path and outcome; path "" is Observe's, which has none.
type series struct {
	path    string
	outcome idem.Outcome
}

// options are a series' measurement options, made once.
type options struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// Metrics is an idem.CallObserver on OpenTelemetry instruments. It is safe
// for concurrent use.
type Metrics struct {
	calls    metric.Int64Counter
	duration metric.Float64Histogram
	dynamo   metric.Int64Histogram
	lease    metric.Float64Histogram
	series   map[series]options // read only once made
}

// NewMetrics makes the instruments on mp's meter (nil:
// otel.GetMeterProvider(), the global one).
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(meterName)
	m := &Metrics{series: map[series]options{}}
	var err error
	if m.calls, err = meter.Int64Counter("idem.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls of Do and DoAtomic that reached an outcome.")); err != nil {
		return nil, err
	}
	if m.duration, err = meter.Float64Histogram("idem.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from a call's start to its outcome."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30)); err != nil {
		return nil, err
	}
	if m.dynamo, err = meter.Int64Histogram("idem.dynamodb.calls", metric.WithUnit("{call}"),
		metric.WithDescription("DynamoDB calls a call sent, its own resends included."),
		metric.WithExplicitBucketBoundaries(0, 1, 2, 3, 4, 6, 8, 12, 16)); err != nil {
		return nil, err
	}
	if m.lease, err = meter.Float64Histogram("idem.lease.used", metric.WithUnit("s"),
		metric.WithDescription("Lease time a call held, from the claim to the commit or the lapse."),
		metric.WithExplicitBucketBoundaries(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 900)); err != nil {
		return nil, err
	}
	for _, path := range []string{"do", "atomic", ""} {
		for _, o := range outcomes {
			m.series[series{path, o}] = newOptions(series{path, o})
		}
	}
	return m, nil
}

func newOptions(s series) options {
	attrs := []attribute.KeyValue{attribute.String("idem.outcome", string(s.outcome))}
	if s.path != "" {
		attrs = append(attrs, attribute.String("idem.path", s.path))
	}
	opt := metric.WithAttributeSet(attribute.NewSet(attrs...))
	return options{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
}

// options are s's options: made once for the outcomes a Store reports,
// made anew for any other.
func (m *Metrics) options(s series) options {
	if o, ok := m.series[s]; ok {
		return o
	}
	return newOptions(s)
}

// ObserveCall records one call: the Store calls it, as its Metrics has it,
// instead of Observe.
func (m *Metrics) ObserveCall(o idem.Observation) {
	ctx := context.Background()
	opts := m.options(series{o.Path, o.Outcome})
	m.calls.Add(ctx, 1, opts.add...)
	m.duration.Record(ctx, o.Duration.Seconds(), opts.record...)
	m.dynamo.Record(ctx, int64(o.Calls), opts.record...)
	if o.LeaseUsed > 0 {
		m.lease.Record(ctx, o.LeaseUsed.Seconds(), opts.record...)
	}
}

// Observe records an outcome without its path, duration or DynamoDB calls,
// for a caller that has only these: it counts the call and the lease it
// held. A Store calls ObserveCall instead.
func (m *Metrics) Observe(o idem.Outcome, leaseUsed time.Duration) {
	ctx := context.Background()
	opts := m.options(series{"", o})
	m.calls.Add(ctx, 1, opts.add...)
	if leaseUsed > 0 {
		m.lease.Record(ctx, leaseUsed.Seconds(), opts.record...)
	}
}

var _ idem.CallObserver = (*Metrics)(nil)
