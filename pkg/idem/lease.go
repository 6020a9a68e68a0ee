package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// lease is a won claim: the right to run the work and commit until the
// lease ends, fenced by token.
type lease struct {
	pk       string
	token    string
	until    int64 // lease_until as written to the record, epoch ms
	duration time.Duration
	item     map[string]types.AttributeValue // the record as claimed
}

// condLease is the fence: only the holder of the current lease completes
// the record or lapses it.
//
// model: pkg/idem/model/idem.pml mirrors this condition (inline commit and
// inline lapse); change both together.
const condLease = "#status = :in_progress AND lease_token = :mine"

// run executes the work under the lease and commits what it produced.
func (s *Store) run(ctx context.Context, c *call, l *lease, work Work) (res Result, err error) {
	c.leaseFrom = l.until - l.duration.Milliseconds()
	workCtx, cancel, err := s.workContext(ctx, l)
	if err != nil {
		_, _, _ = s.lapse(ctx, l.pk, l.token) // a lapse that fails for good leaves the lease to run out
		c.observe(OutcomeLapsed)
		return Result{}, err
	}
	defer cancel()
	defer func() {
		// A panicking work is a crash as far as the protocol goes, but this
		// process survives it, so it can hand the lease back at once
		// instead of leaving it to run out.
		if p := recover(); p != nil {
			c.worked("panic")
			_, _, _ = s.lapse(ctx, l.pk, l.token) // a lapse that fails for good leaves the lease to run out
			c.outcome = OutcomeLapsed
			panic(p)
		}
	}()
	var tx Tx
	resp, err := work(workCtx, &tx)
	if err != nil {
		c.worked("error")
		_, _, _ = s.lapse(ctx, l.pk, l.token) // a lapse that fails for good leaves the lease to run out
		c.log.Warn("idem", "outcome", "lapsed", "error", err.Error())
		c.observe(OutcomeLapsed)
		return Result{}, err
	}
	c.worked("ok")
	o := s.commit(ctx, s.completion(l, tx.writes), resp)
	c.committed(o, len(tx.writes))
	switch {
	case o.unknown:
		o = s.settle(ctx, l.pk, l.token, o)
	case o.err != nil:
		_, _, _ = s.lapse(ctx, l.pk, l.token) // a lapse that fails for good leaves the lease to run out
	}
	return c.finish(o, l.token, OutcomeLapsed)
}

// workContext ends at the lease's end as written to the record, less the
// commit reserve: time the claim took (SDK retries, a slow network) comes
// out of the work's time, never out of the fence's margin.
//
// The deadline is lease_until as written (whole milliseconds) less the
// reserve, moved from the Store's clock onto the real one; the real clock is
// read first, so that the move never lands after it.
func (s *Store) workContext(ctx context.Context, l *lease) (context.Context, context.CancelFunc, error) {
	reserve := min(s.opts.CommitReserve, l.duration/4)
	real := time.Now()
	deadline := time.UnixMilli(l.until).Add(-reserve).Add(real.Sub(s.opts.Clock()))
	if !deadline.After(real) {
		return nil, nil, fmt.Errorf("idem: the claim took the whole lease; lease lapsed: %w", context.DeadlineExceeded)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	return ctx, cancel, nil
}

// lapse ends a lease at once after a failure that committed nothing: one
// update fenced on the lease sets lease_until to 0, whatever any clock says,
// and keeps the fingerprint and expires_at. The key stays bound to its
// request: the same request's retry takes it over at once, another request
// still gets 422. Deleting instead would let another request bind the key
// after a failure that may already have had an outside effect.
//
// It also replaces the lease token with the lapsed form of it, so that a
// commit of this lease still in flight (sent, its answer lost) fails its
// fence when it lands: once lapsed, a lease never commits.
//
// It reports whether it lapsed the lease, or else the record it found (nil:
// none). Sent twice, the second send fails its condition on the record the
// first one lapsed, which it reads as lapsed. It is a release: it runs even
// when ctx is done, since that is when a failure is likeliest, and it is
// sent again while it has no answer (throttled, a timeout), within the
// bound of releaseContext: a lapse that is not sent again leaves the key
// held for the rest of the lease, and the retry that follows a failure at
// once gets 409 for all of it.
func (s *Store) lapse(ctx context.Context, pk, token string) (lapsed bool, found *record, err error) {
	rctx, cancel := releaseContext(ctx)
	defer cancel()
	err = resolve(rctx, func() (err error) {
		lapsed, found, err = s.lapseOnce(rctx, pk, token)
		return err
	})
	c := s.callIn(ctx)
	switch {
	case lapsed:
		c.event(evLapse, attrResultKey, "lapsed")
	case err != nil:
		c.event(evLapse, attrResultKey, "failed")
	default:
		c.event(evLapse, attrResultKey, "lost")
	}
	return lapsed, found, err
}

// lapseOnce sends the lapse once (again only past a transaction in flight,
// retryConflicts' few times), in ctx, a release's context.
func (s *Store) lapseOnce(ctx context.Context, pk, token string) (lapsed bool, found *record, err error) {
	err = s.misfit(retryConflicts(ctx, func(int) error {
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                &s.table,
			Key:                      map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: pk}},
			UpdateExpression:         exprLapse,
			ConditionExpression:      exprLease,
			ExpressionAttributeNames: namesStatus,
			ExpressionAttributeValues: leaseValues(token, map[string]types.AttributeValue{
				":zero": number(0), ":lapsed": &types.AttributeValueMemberS{Value: lapsedToken(token)},
			}),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	}))
	if err == nil {
		return true, nil, nil
	}
	if ccf := conditionFailed(err); ccf != nil {
		found, err = s.seen(ctx, pk, ccf.Item)
		if found != nil && found.Status == statusInProgress && found.LeaseToken == lapsedToken(token) {
			s.callIn(ctx).event(evReadBack, attrCallKey, "lapse")
			return true, nil, err // an earlier send of this lapse landed
		}
		return false, found, err
	}
	return false, nil, fmt.Errorf("idem: lapse: %w", err)
}

// lapsedToken is the token a lapse leaves in place of the lease's own: no
// holder has it, and the lease it came from can tell it is its own lapse.
func lapsedToken(token string) string { return token + ".lapsed" }

// settle decides a commit whose outcome the client did not see (a timeout,
// a reset after every SDK retry) by lapsing the lease, which races the
// commit safely since both are fenced on it. Lapsed: the commit had not
// landed, and cannot land after (the lapse replaced the token). Completed
// under this lease token: the commit landed and only its answer was lost.
// Anyone else's record: this lease lost the key.
func (s *Store) settle(ctx context.Context, pk, token string, unknown outcome) outcome {
	o, result := s.settleLapse(ctx, pk, token, unknown)
	s.callIn(ctx).event(evSettle, attrResultKey, result)
	return o
}

// settleLapse is settle's lapse and its reading, with the result in a word.
func (s *Store) settleLapse(ctx context.Context, pk, token string, unknown outcome) (outcome, string) {
	cause := unknown.err
	var lapsed bool
	var r *record
	rctx, cancel := releaseContext(ctx)
	defer cancel()
	err := resolve(rctx, func() (err error) {
		lapsed, r, err = s.lapseOnce(rctx, pk, token)
		return err
	})
	switch {
	case err != nil && errors.Is(cause, ErrMisconfigured) && errors.Is(err, ErrMisconfigured):
		// The commit and the lapse both refused for the table: the
		// configuration, not an outcome to wait out.
		return outcome{err: fmt.Errorf("%w (and the lapse: %v)", cause, err)}, "failed" //nolint:errorlint // the commit's cause is the answer; the lapse's error is detail
	case err != nil:
		// Unknown: neither error is the answer (a refused lapse does not
		// make a commit that may have landed a definite failure).
		return outcome{err: fmt.Errorf("idem: commit outcome unknown (it may still land), lease left to run out: %v", errors.Join(cause, err))}, "unknown" //nolint:errorlint // neither cause is the answer: matching one would make an outcome that may still land look definite
	case lapsed:
		return outcome{err: fmt.Errorf("idem: commit failed, lease lapsed: %w", cause)}, "lapsed"
	case r != nil && r.Status == statusCompleted && r.LeaseToken == token:
		s.callIn(ctx).event(evReadBack, attrCallKey, "commit")
		return outcome{res: Result{Response: withCookiesOf(r.response(), unknown.sent)}}, "committed"
	case r != nil && r.LeaseToken != token:
		return outcome{lost: true, seen: r}, "lost"
	}
	return outcome{err: fmt.Errorf("idem: commit outcome unknown, the record is gone: %w", cause)}, "gone"
}

// leaseValues are the values of condLease, with more.
func leaseValues(token string, more map[string]types.AttributeValue) map[string]types.AttributeValue {
	v := [2]types.AttributeValueMemberS{{Value: statusInProgress}, {Value: token}}
	more[":in_progress"], more[":mine"] = &v[0], &v[1]
	return more
}
