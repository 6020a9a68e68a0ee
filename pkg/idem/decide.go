package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// step is what a request does next with the record it last saw.
type step int

const (
	stepClaim    step = iota // no record, or an expired one: claim it fresh
	stepTakeover             // this request's, in progress, lease over: take it over
	stepReplay               // this request's, completed: replay its response
	stepMismatch             // another request's, in any state: refuse (422)
	stepBusy                 // this request's, in progress under a live lease: 409, or wait
)

// next is the protocol's decision, a pure function of the record last seen
// (nil: none), the request's fingerprint and the time. A record carrying the
// caller's own lease token never reaches it: a claim that finds its own token
// has won (see claim).
//
// model: pkg/idem/model/idem.pml's "decide:" mirrors this switch line for
// line; change both together.
func next(seen *record, fp string, now time.Time) step {
	switch {
	case seen == nil || seen.expired(now):
		return stepClaim
	case seen.Fingerprint != fp:
		return stepMismatch
	case seen.Status == statusCompleted:
		return stepReplay
	case seen.leaseLive(now):
		return stepBusy
	}
	return stepTakeover
}

// maxClaims bounds how often one call contends for the key (a fresh claim,
// a takeover, a claim after the record vanished) before it answers 409.
const maxClaims = 4

// call is one Do or DoAtomic in progress: its request, its logger, the
// bounds on its contention and waiting, and what its span and Metrics are
// told.
type call struct {
	s         *Store
	req       Request
	pk        string
	path      string // pathDo, pathAtomic
	log       *slog.Logger
	claims    int
	waitUntil time.Time
	leaseFrom int64     // when the lease was won, epoch ms by the Store's clock; 0: none
	started   time.Time // before any write: a commit's expires_at is later

	span     trace.Span   // nil: not traced
	rec      bool         // the span records: steps become its events
	outcome  Outcome      // as observe reported it
	cacheHit bool         // answered from Options.Cache
	takeover bool         // the write that won took over a lapsed lease
	workErr  bool         // the error returned is the work's own (or its ConflictFunc's)
	panicked bool         // the work panicked
	calls    atomic.Int32 // DynamoDB calls sent, while anyone listens (see start)
	begun    time.Time    // the real time at the start, for Observation.Duration
}

func (s *Store) newCall(ctx context.Context, req Request, path string) (*call, error) {
	if err := validateRequest(req); err != nil {
		return nil, err
	}
	return &call{s: s, req: req, pk: recordPK(req.Scope, req.Key), path: path, log: s.logger(ctx, req, path), started: s.opts.Clock()}, nil
}

// contend counts one more try at the key, or answers in progress once the
// call has tried maxClaims times.
func (c *call) contend(seen *record) error {
	if c.claims == maxClaims {
		return c.busy(seen)
	}
	c.claims++
	return nil
}

// answer ends the call on a record that decides it: a replay or a refusal.
func (c *call) answer(st step, seen *record) (Result, error) {
	if st == stepReplay {
		c.s.cache.put(c.pk, seen.LeaseToken, seen.Fingerprint, seen.response(), seen.ExpiresAt)
		c.log.Info("idem", "outcome", "replayed", "status", seen.response().StatusCode)
		c.observe(OutcomeReplayed)
		return Result{Response: seen.response(), Replayed: true}, nil
	}
	c.log.Info("idem", "outcome", "fingerprint_mismatch")
	c.observe(OutcomeMismatch)
	return Result{}, fmt.Errorf("%w (first used at %s)", ErrFingerprintMismatch, time.UnixMilli(seen.CreatedAt).UTC().Format(time.RFC3339))
}

// wait answers a live lease: at once with ErrInProgress, or, with
// Options.Wait, by reading the record again until the wait is over.
func (c *call) wait(ctx context.Context, seen *record) (*record, error) {
	if c.s.opts.Wait <= 0 {
		return nil, c.busy(seen)
	}
	if c.waitUntil.IsZero() {
		c.waitUntil = time.Now().Add(c.s.opts.Wait)
	}
	if !time.Now().Before(c.waitUntil) {
		return nil, c.busy(seen)
	}
	r, err := c.s.poll(ctx, c.pk, c.waitUntil)
	switch {
	case err != nil:
		c.event(evPoll, attrRecordKey, "error")
	case r == nil:
		c.event(evPoll, attrRecordKey, "none")
	default:
		c.event(evPoll, attrRecordKey, r.statusWord())
	}
	return r, err
}

// busy is the 409: in progress, retry when the lease last seen ends,
// rounded up to a whole second (Retry-After's unit), so that a client that
// honours it does not come back into the same lease.
func (c *call) busy(seen *record) error {
	retry := time.Second
	if seen != nil {
		if left := time.UnixMilli(seen.LeaseUntil).Sub(c.s.opts.Clock()); left > retry {
			retry = (left + time.Second - 1).Truncate(time.Second)
		}
	}
	c.log.Info("idem", "outcome", "in_progress")
	c.observe(OutcomeInProgress)
	return &InProgressError{RetryAfter: retry}
}

// claimFailed ends a call whose claim failed: logged and reported, as a
// key in progress where the claim met a transaction in flight.
func (c *call) claimFailed(err error) (Result, error) {
	outcome := OutcomeFailed
	if errors.Is(err, ErrInProgress) {
		outcome = OutcomeInProgress
	}
	c.log.Warn("idem", "outcome", string(outcome), "error", err.Error())
	c.observe(outcome)
	return Result{}, err
}

// finish logs, reports and returns what a commit under token came to;
// failed names a failure (OutcomeLapsed where the lease was handed back).
func (c *call) finish(o outcome, token string, failed Outcome) (Result, error) {
	switch {
	case o.lost:
		c.log.Warn("idem", "outcome", "fenced")
		c.observe(OutcomeFenced)
		return Result{}, ErrLeaseLost
	case o.err != nil:
		c.workErr = o.fromWork
		c.log.Warn("idem", "outcome", string(failed), "error", o.err.Error())
		c.observe(failed)
		return Result{}, o.err
	}
	c.s.cache.put(c.pk, token, c.req.Fingerprint, o.res.Response, c.started.Add(c.s.opts.TTL).Unix())
	c.log.Info("idem", "outcome", "executed", "status", o.res.Response.StatusCode)
	c.observe(OutcomeExecuted)
	return o.res, nil
}

// cached answers from the execution environment's cache: a replay, or the
// 422 of another request's key. hit is false on a miss (or no cache).
func (c *call) cached() (res Result, hit bool, err error) {
	v, ok := c.s.cache.get(c.pk, c.s.opts.Clock())
	switch {
	case !ok:
		return Result{}, false, nil
	case v.fingerprint != c.req.Fingerprint:
		c.cacheHit = true
		c.log.Info("idem", "outcome", "fingerprint_mismatch", "cache", true)
		c.observe(OutcomeMismatch)
		return Result{}, true, ErrFingerprintMismatch
	}
	// A cache hit, answered with no DynamoDB call.
	c.cacheHit = true
	c.log.Info("idem", "outcome", "replayed", "status", v.resp.StatusCode, "cache", true)
	c.observe(OutcomeCacheHit)
	return Result{Response: cloneResponse(v.resp), Replayed: true}, true, nil // the caller's own
}
