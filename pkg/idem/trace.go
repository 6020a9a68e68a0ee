package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of a Store's spans.
const tracerName = "github.com/idemkeys/idem/pkg/idem"

// The paths, as spans, metrics and logs name them.
const (
	pathDo     = "do"
	pathAtomic = "atomic"
)

// What a span carries: never the key, the scope, the body, a header or a
// response, only KeyHash and these words and counts.
const (
	attrPathKey     = attribute.Key("idem.path")
	attrKeyHashKey  = attribute.Key("idem.key_hash")
	attrOutcomeKey  = attribute.Key("idem.outcome")
	attrCacheHitKey = attribute.Key("idem.cache_hit")
	attrStatusKey   = attribute.Key("idem.status_code")
	attrTakeoverKey = attribute.Key("idem.takeover")
	attrCallsKey    = attribute.Key("idem.dynamodb.calls")
	attrResultKey   = attribute.Key("idem.result")
	attrCallKey     = attribute.Key("idem.call")
	attrRecordKey   = attribute.Key("idem.record")
	attrAttemptKey  = attribute.Key("idem.attempt")
	attrWritesKey   = attribute.Key("idem.writes")
	attrErrorType   = attribute.Key("error.type") // OpenTelemetry's semantic convention
)

// The events of a call's span, each when its step got its answer.
const (
	evClaim    = "idem.claim"     // the claim's put: result won, lost, unknown, failed
	evTakeover = "idem.takeover"  // a claim over this request's lapsed lease, as evClaim
	evReadBack = "idem.read_back" // a call that landed and lost its answer, read back as its own: call
	evPoll     = "idem.poll"      // Options.Wait's read: record in_progress, completed, none
	evWork     = "idem.work"      // the work returned: result ok, error, panic
	evConflict = "idem.conflict"  // a business write's condition failed: result its ConflictFunc's
	evCommit   = "idem.commit"    // result committed, lost, unknown, failed
	evSettle   = "idem.settle"    // an unknown commit settled: result lapsed, handed_back, committed, lost, gone, unknown, failed
	evLapse    = "idem.lapse"     // result lapsed, lost, failed
	evHandBack = "idem.hand_back" // result handed, lost, failed
)

// globalDefault is the global TracerProvider OpenTelemetry starts with:
// it starts no spans until an SDK is set, and from then on
// otel.GetTracerProvider returns the SDK's instead. Set back in its place,
// it means no tracing again. It is nil if a provider that starts spans was
// set before this package was initialised (no call is then skipped).
var globalDefault = func() trace.TracerProvider {
	if tp := otel.GetTracerProvider(); spanTracer(tp) == nil {
		return tp
	}
	return nil
}()

// tracing is a Store's source of tracers: Options.TracerProvider's, or the
// global provider's, looked up per call so that a provider set after New
// is used.
type tracing struct {
	set    bool         // Options.TracerProvider was given
	tracer trace.Tracer // its tracer; nil if it starts no spans
	last   atomic.Pointer[providerTracer]
}

// providerTracer is what the global provider last seen gives a call: its
// tracer, or nil if it starts no spans.
type providerTracer struct {
	tp     trace.TracerProvider
	tracer trace.Tracer
}

func newTracing(tp trace.TracerProvider) *tracing {
	// The global default, given as the option, is the global provider too:
	// it delegates to the SDK once one is set.
	t := &tracing{set: tp != nil && tp != globalDefault}
	if t.set {
		t.tracer = spanTracer(tp)
	}
	return t
}

// The probe's parent: a remote span that was not sampled.
var probeParent = trace.NewSpanContext(trace.SpanContextConfig{
	TraceID: trace.TraceID{0x1d, 0xe0},
	SpanID:  trace.SpanID{0x1d, 0xe0},
	Remote:  true,
})

// spanTracer is tp's tracer if tp starts spans of its own, else nil: a
// call then starts no span, which would allocate. The test is what the
// API documents: a no-op tracer hands back a span that carries its
// parent's span context (so does the global default before an SDK is
// set), where the SDK gives every span, sampled or not, a span ID of its
// own so that other components can rely on it. The
// probe's parent was not sampled, so a parent-based sampler (the SDK's
// default) records nothing and no span processor sees the probe. It is
// never ended: a sampler that records it anyway must not export it.
func spanTracer(tp trace.TracerProvider) trace.Tracer {
	tracer := tp.Tracer(tracerName)
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), probeParent)
	_, probe := tracer.Start(ctx, "idem.probe")
	if probe.SpanContext().SpanID() == probeParent.SpanID() {
		return nil
	}
	return tracer
}

// get is the tracer for a call now, or nil if nothing would record.
func (t *tracing) get() trace.Tracer {
	if t.set {
		return t.tracer
	}
	tp := otel.GetTracerProvider()
	if tp == globalDefault {
		return nil
	}
	if last := t.last.Load(); last != nil && last.tp == tp {
		return last.tracer
	}
	tracer := spanTracer(tp)
	if reflect.TypeOf(tp).Comparable() { // == on any other would panic
		t.last.Store(&providerTracer{tp, tracer})
	}
	return tracer
}

// callKey finds a Store's call in a context, where its DynamoDB calls are
// counted and its deeper steps find its span. It is there only while
// someone listens (a recording span, or Metrics that count calls).
type callKey struct{ s *Store }

// callIn is s's call that ctx belongs to, or nil.
func (s *Store) callIn(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{s}).(*call)
	return c
}

// start begins c's span, if the Store traces, and puts c in the context
// if anyone listens to it. With nothing listening it returns ctx as it is
// and allocates nothing.
func (c *call) start(ctx context.Context) context.Context {
	if c.s.perCall != nil {
		c.begun = time.Now()
	}
	if t := c.s.tracing.get(); t != nil {
		name := "idem.Do"
		if c.path == pathAtomic {
			name = "idem.DoAtomic"
		}
		ctx, c.span = t.Start(ctx, name)
		c.rec = c.span.IsRecording()
	}
	if c.rec {
		c.span.SetAttributes(attrPathKey.String(c.path), attrKeyHashKey.String(KeyHash(c.req.Scope, c.req.Key)))
		if c.s.opts.Logger.Enabled(ctx, slog.LevelWarn) {
			c.log = c.log.With("trace_id", c.span.SpanContext().TraceID().String()) // from a log line to its trace
		}
	}
	// A call of this Store's work that calls it again (nested) takes the
	// place of the outer call in its context, so that its calls and steps
	// are never counted as the outer's.
	if c.rec || c.s.perCall != nil || c.s.callIn(ctx) != nil {
		ctx = context.WithValue(ctx, callKey{c.s}, c)
	}
	return ctx
}

// event adds a step to c's span, if it records; c may be nil (a step
// outside any call: the operator's). It takes its words as strings, so
// that a call whose span does not record allocates nothing for it.
func (c *call) event(name string, key attribute.Key, value string) {
	if c == nil || !c.rec {
		return
	}
	c.span.AddEvent(name, trace.WithAttributes(key.String(value)))
}

// eventN is event with a count beside its result.
func (c *call) eventN(name, result string, key attribute.Key, n int) {
	if c == nil || !c.rec {
		return
	}
	c.span.AddEvent(name, trace.WithAttributes(attrResultKey.String(result), key.Int(n)))
}

// claimed adds the claim's event: a fresh claim, or a takeover of seen,
// this request's lapsed lease, whose attempt it is.
func (c *call) claimed(takeover bool, seen *record, result string) {
	if !c.rec {
		return
	}
	name, attempt := evClaim, 1
	if takeover {
		name, attempt = evTakeover, seen.Attempts+1
		c.takeover = c.takeover || result == "won"
	}
	c.eventN(name, result, attrAttemptKey, attempt)
}

// worked adds the work's event: it returned ok, an error, or panicked.
func (c *call) worked(result string) {
	c.workErr = result == "error"
	c.panicked = result == "panic"
	c.event(evWork, attrResultKey, result)
}

// committed adds the commit's event, from what it came to.
func (c *call) committed(o outcome, writes int) {
	c.eventN(evCommit, commitResult(o), attrWritesKey, writes)
}

func commitResult(o outcome) string {
	switch {
	case o.lost:
		return "lost"
	case o.unknown:
		return "unknown"
	case o.err != nil:
		return "failed"
	}
	return "committed"
}

// atomicCommitted is committed for DoAtomic, whose commit is its claim:
// a takeover where it puts over this request's lapsed lease.
func (c *call) atomicCommitted(o outcome, writes int, takeover bool) {
	if !c.rec {
		return
	}
	if takeover {
		c.span.AddEvent(evCommit, trace.WithAttributes(attrResultKey.String(commitResult(o)), attrWritesKey.Int(writes), attrTakeoverKey.Bool(true)))
		return
	}
	c.eventN(evCommit, commitResult(o), attrWritesKey, writes)
}

// end ends c's span with what the call came to: res and err, as Do
// returns them, and the outcome observe reported (none: a panic, or an
// error before any outcome).
func (c *call) end(res *Result, err *error) {
	if c.span == nil {
		return
	}
	defer c.span.End()
	if !c.rec {
		return
	}
	o, e := c.outcome, *err
	if o == "" {
		o = OutcomeFailed
		if e == nil && !c.panicked {
			c.panicked = true // ended without an outcome or an error: a panic
		}
	}
	attrs := []attribute.KeyValue{attrOutcomeKey.String(string(o)), attrCacheHitKey.Bool(c.cacheHit), attrCallsKey.Int64(int64(c.calls.Load()))}
	if c.takeover {
		attrs = append(attrs, attrTakeoverKey.Bool(true))
	}
	if e == nil && !c.panicked {
		attrs = append(attrs, attrStatusKey.Int(res.Response.StatusCode))
	}
	c.span.SetAttributes(attrs...)
	c.recordError(e)
}

// recordError marks the span failed where the call's end is a failure to
// look at: not a 409 or a 422, which are answers like any other (as a
// server's span is not an error for a 4xx), nor a work's error that
// carries a 4xx answer. The error's text is recorded where it is this
// package's own; a work's error is its code's, which may hold anything,
// so only its type is.
func (c *call) recordError(err error) {
	switch {
	case c.panicked:
		c.span.SetAttributes(attrErrorType.String("panic"))
		c.span.SetStatus(codes.Error, "the work panicked")
		return
	case err == nil, errors.Is(err, ErrInProgress), errors.Is(err, ErrFingerprintMismatch):
		return
	}
	if status, ok := answerStatus(err); ok && status < 500 {
		return
	}
	if c.workErr {
		typ := fmt.Sprintf("%T", err)
		c.span.AddEvent("exception", trace.WithAttributes(attribute.String("exception.type", typ)))
		c.span.SetAttributes(attrErrorType.String(typ))
		c.span.SetStatus(codes.Error, "the work failed ("+typ+")")
		return
	}
	c.span.RecordError(err)
	c.span.SetAttributes(attrErrorType.String(errorType(err)))
	c.span.SetStatus(codes.Error, err.Error())
}

// answerStatus is the status of the answer an error stands for, where it
// carries one (a door's unstored answer, a ConflictFunc's 5xx).
func answerStatus(err error) (int, bool) {
	var answer interface{ Response() Response }
	if errors.As(err, &answer) {
		return answer.Response().StatusCode, true
	}
	return 0, false
}

// errorType is error.type for this package's own errors: the sentinel
// they match, in a word, else DynamoDB's error code, else "_OTHER" (the
// semantic conventions' word for none).
func errorType(err error) string {
	for _, s := range []struct {
		err  error
		name string
	}{
		{ErrLeaseLost, "lease_lost"},
		{ErrMisconfigured, "misconfigured"},
		{ErrInvalidWrite, "invalid_write"},
		{ErrWriteConditionFailed, "write_condition_failed"},
		{ErrResponseTooLarge, "response_too_large"},
		{ErrItemTooLarge, "item_too_large"},
		{ErrTooManyWrites, "too_many_writes"},
		{ErrTransactionTooLarge, "transaction_too_large"},
		{context.DeadlineExceeded, "deadline_exceeded"},
		{context.Canceled, "canceled"},
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return "_OTHER"
}

// statusWord is the record's status as a span names it.
func (r *record) statusWord() string {
	if r.Status == statusCompleted {
		return "completed"
	}
	return "in_progress"
}
