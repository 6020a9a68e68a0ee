package idem

import (
	"context"
)

// DoAtomic is Do in one round trip, for work with no effect outside
// DynamoDB (creating an order, say). The work runs first and only computes:
// its business writes and its response. Then one TransactWriteItems puts
// the record straight as completed, under the claim's condition, together
// with the writes. There is no in-progress state and no lease.
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
func (s *Store) DoAtomic(ctx context.Context, req Request, work Work) (Result, error) {
	c, err := s.newCall(ctx, req, "atomic")
	if err != nil {
		return Result{}, err
	}
	if res, hit, err := c.cached(); hit {
		return res, err
	}
	var tx Tx
	resp, err := work(ctx, &tx)
	if err != nil {
		return Result{}, err
	}
	var seen *record
	for {
		switch st := next(seen, req.Fingerprint, s.opts.Clock()); st {
		case stepClaim, stepTakeover:
			if err := c.contend(seen); err != nil {
				return Result{}, err
			}
			cp := s.atomicCompletion(c, seen, tx.writes)
			o := s.commit(ctx, cp, resp)
			if o.unknown {
				o = s.settle(ctx, cp.pk, cp.token, o.err)
			}
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
func (s *Store) atomicCompletion(c *call, seen *record, writes []Write) completion {
	now := s.opts.Clock()
	put := s.claimPut(c, seen, StatusCompleted, now, now)
	s.complete(put.Item)
	return completion{pk: c.pk, token: token(put.Item), put: put, writes: writes}
}
