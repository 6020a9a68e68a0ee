package idem

import (
	"context"
	"errors"
	"time"
)

// A release ends a lease, or a claim or commit whose outcome is unknown:
// the lapse after a failure, settle's lapse, the hand-back of a claim or
// of DoAtomic's commit. Its sends, the SDK's retries of each and
// resolve's resends while it has no answer about the record (throttled, a
// transaction in flight on it past retryConflicts' bound, a timeout) end
// settleFor after the release began, or once the request's context is
// done but not before releaseFloor: a request is answered within that of
// its failure, and a request whose own context is over still sends its
// release. settleFor is of the order of the SDK's own budget for one call
// (its attempts back off for up to about 3 s in all).
//
// Until a settling release lands, a commit or claim still in flight may
// land, so an answer given before would not say what happened: one that
// runs out answers that the outcome is unknown and leaves the lease to run
// out (Options.Lease), as a Lambda stopped at its deadline meanwhile is a
// crash with the commit in flight (model: idem.pml's "crash, commit in
// flight", and the settling call that never lands; the model holds for any
// bound).
const (
	settleFor    = 5 * time.Second
	releaseFloor = time.Second
)

// releaseContext is a release's context: free of ctx's cancellation, it
// ends settleFor after now, or releaseFloor after now once ctx is done,
// whichever comes first.
func releaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	floor := time.Now().Add(releaseFloor)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleFor)
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(time.Until(floor), cancel) })
	return rctx, func() { stop(); cancel() }
}

// resolve sends a settling release until it has an answer about the
// record (nil, or a failed condition, which the call reads itself), or is
// refused for good (the table, ValidationException), or ctx, the
// release's, is done.
//
// model: idem.pml's settle and hand-back branch "never lands" is this
// bound running out: a settling call that never lands leaves the commit
// or claim it settles free to land later.
func resolve(ctx context.Context, send func() error) error {
	for attempt := 0; ; attempt++ {
		err := send()
		if err == nil || conditionFailed(err) != nil || errors.Is(err, ErrMisconfigured) || refused(err) || ctx.Err() != nil {
			return err
		}
		if sleep(ctx, backoff(min(attempt, 5))) != nil {
			return err
		}
	}
}
