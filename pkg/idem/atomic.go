package idem

import (
	"context"
	"errors"
	"fmt"
)

// DoAtomic is Do in one round trip, for work with no effect outside
// DynamoDB (creating an order, say). The work runs first and only computes:
// its business writes and its response. Then one call puts the record
// straight as completed, under the claim's condition: a TransactWriteItems
// with the writes, or a PutItem of the record alone when there are none.
// There is no in-progress state and no lease.
//
// The work may therefore run more often than it commits: a duplicate racing
// the first request runs it too, and its transaction loses. It must not call
// out, send, or write anything but through tx.
//
// A losing transaction returns the record that beat it in its cancellation
// reasons, so a duplicate is answered without a second call: the stored
// response if the fingerprint matches (Replayed), ErrFingerprintMismatch if
// not, ErrInProgress (or Options.Wait) for a live lease left by Do. A lapsed
// lease of Do's, for the same request, is taken over and that holder fenced.
// A first request and a replay each cost one call.
func (s *Store) DoAtomic(ctx context.Context, req Request, work Work) (res Result, err error) {
	c, err := s.newCall(ctx, req, pathAtomic)
	if err != nil {
		return Result{}, err
	}
	ctx = c.start(ctx)
	defer c.end(&res, &err)
	if res, hit, err := c.cached(); hit {
		return res, err
	}
	var tx Tx
	resp, err := work(ctx, &tx)
	if err != nil {
		c.worked("error")
		return Result{}, err
	}
	c.worked("ok")
	var seen *record
	for {
		switch st := next(seen, req.Fingerprint, s.opts.Clock()); st {
		case stepClaim, stepTakeover:
			if err := c.contend(seen); err != nil {
				return Result{}, err
			}
			cp := s.atomicCompletion(c, seen, tx.writes)
			o := s.commit(ctx, cp, resp)
			takeover := cp.put.ConditionExpression == exprTakeover
			c.atomicCommitted(o, len(tx.writes), takeover)
			if o.unknown {
				o = s.settleAtomic(ctx, cp, o)
			}
			c.takeover = takeover && !o.lost && o.err == nil
			if !o.lost {
				return c.finish(o, cp.token, OutcomeFailed)
			}
			seen = o.seen
		case stepBusy:
			if seen, err = c.wait(ctx, seen); err != nil {
				return Result{}, err
			}
		default:
			return c.answer(st, seen)
		}
	}
}

// atomicCompletion is DoAtomic's: a new record, completed at once, under the
// claim's condition.
func (s *Store) atomicCompletion(c *call, seen *record, writes []queued) completion {
	now := s.opts.Clock()
	put := s.claimPut(c, seen, statusCompleted, now, now)
	s.complete(put.Item)
	return completion{pk: c.pk, token: token(put.Item), put: put, writes: writes, first: true}
}

// settleAtomic decides a DoAtomic commit whose outcome the client did not
// see. A lapse cannot: the record is put straight as completed, never in
// progress, so a lapse finds nothing to lapse, and the transaction still in
// flight lands after it. The commit's put is a claim, so it is handed
// back as a claim is: where it had not landed, the key is
// left bound to the request with a lapsed lease, which no send of the
// commit can land on and the retry takes over at once; completed under its
// own token, it landed.
//
// model: idem.pml's AReq settle; its negative control ATOMIC_SETTLE_LAPSE.
func (s *Store) settleAtomic(ctx context.Context, cp completion, unknown outcome) outcome {
	o, result := s.settleHandBack(ctx, cp, unknown)
	s.callIn(ctx).event(evSettle, attrResultKey, result)
	return o
}

// settleHandBack is settleAtomic's hand-back and its reading, with the
// result in a word.
func (s *Store) settleHandBack(ctx context.Context, cp completion, unknown outcome) (outcome, string) {
	cause := unknown.err
	handed, r, err := s.handBack(ctx, cp.pk, cp.put)
	switch {
	case err != nil && errors.Is(cause, ErrMisconfigured) && errors.Is(err, ErrMisconfigured):
		return outcome{err: fmt.Errorf("%w (and the hand-back: %v)", cause, err)}, "failed" //nolint:errorlint // the configuration, as in settle: the commit's cause is the answer, the hand-back's is detail
	case err != nil:
		return outcome{err: fmt.Errorf("idem: commit outcome unknown (it may still land), and it could not be handed back: %v", errors.Join(cause, err))}, "unknown" //nolint:errorlint // neither cause is the answer: matching one would make an outcome that may still land look definite
	case handed:
		return outcome{err: fmt.Errorf("idem: commit failed, nothing written; the key is handed back to the request with a lapsed lease: %w", cause)}, "handed_back"
	case r != nil && r.Status == statusCompleted && r.LeaseToken == cp.token:
		s.callIn(ctx).event(evReadBack, attrCallKey, "commit")
		return outcome{res: Result{Response: withCookiesOf(r.response(), unknown.sent)}}, "committed"
	}
	return outcome{lost: true, seen: r}, "lost"
}
