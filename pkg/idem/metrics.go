package idem

import "time"

// Outcome names what one call came to, for Metrics. The log lines carry
// the same words in their "outcome" field (fingerprint_mismatch there for
// OutcomeMismatch).
type Outcome string

// The outcomes a Store reports.
const (
	// OutcomeExecuted: the work ran and its response was committed.
	OutcomeExecuted Outcome = "executed"
	// OutcomeReplayed: a stored response was answered; the work did not run.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeInProgress: another request held a live lease (409).
	OutcomeInProgress Outcome = "in_progress"
	// OutcomeMismatch: the key was bound to a different request (422).
	OutcomeMismatch Outcome = "mismatch"
	// OutcomeFenced: the lease was taken over while the work ran; nothing
	// was committed (ErrLeaseLost). Every one of these deserves a look: the
	// lease was shorter than the work.
	OutcomeFenced Outcome = "fenced"
	// OutcomeLapsed: the work or its commit failed and the lease was handed
	// back, so that the request's retry runs the work again.
	OutcomeLapsed Outcome = "lapsed"
	// OutcomeFailed: the claim failed (the table refused it, or its outcome
	// was unknown and its lease lapsed), or DoAtomic's commit failed; no
	// lease was held to hand back.
	OutcomeFailed Outcome = "failed"
	// OutcomeCacheHit: a response answered from the Store's cache
	// (Options.Cache), without a call to DynamoDB.
	OutcomeCacheHit Outcome = "cache_hit"
)

// Metrics receives one observation per call that reached an outcome. Any
// metrics library fits behind it; it is called on the request's goroutine,
// so it must be quick and safe for concurrent use.
//
// leaseUsed is how long the lease had been held when the call ended: from
// the claim to the commit (executed, fenced) or to the lapse. It is 0 for
// outcomes that held no lease (replayed, in progress, mismatch, DoAtomic's).
//
// A Metrics that is also a CallObserver is called with ObserveCall
// instead, which says more.
type Metrics interface {
	Observe(outcome Outcome, leaseUsed time.Duration)
}

// CallObserver is a Metrics told the whole of each call: a Store calls
// ObserveCall, not Observe, on an Options.Metrics that has it (package
// idemotel's does).
type CallObserver interface {
	Metrics
	ObserveCall(Observation)
}

// Observation is one call as ObserveCall sees it. Calls counts the
// DynamoDB calls the Store sent for it, each resend of its own included
// but not the SDK's retries within one: 2 for Do's first request, 1 for
// DoAtomic's and for a replay from the table, 0 from Options.Cache.
type Observation struct {
	Path      string // "do" (Do) or "atomic" (DoAtomic)
	Outcome   Outcome
	Duration  time.Duration // from the call's start to its outcome
	LeaseUsed time.Duration // as Observe's leaseUsed
	Calls     int
}

// observe reports an outcome, to the span's end and to Metrics. With no
// Metrics set it costs a nil check and allocates nothing.
func (c *call) observe(o Outcome) {
	c.outcome = o
	m := c.s.opts.Metrics
	if m == nil {
		return
	}
	var used time.Duration
	if c.leaseFrom != 0 {
		used = time.Duration(c.s.opts.Clock().UnixMilli()-c.leaseFrom) * time.Millisecond
	}
	if pc := c.s.perCall; pc != nil {
		pc.ObserveCall(Observation{Path: c.path, Outcome: o, Duration: time.Since(c.begun), LeaseUsed: used, Calls: int(c.calls.Load())})
		return
	}
	m.Observe(o, used)
}
