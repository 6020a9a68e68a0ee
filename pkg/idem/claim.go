package idem

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The claim conditions. A fresh claim wins where there is no record or only
// an expired one (TTL deletes late, so an expired item may still be there).
// A takeover wins only over the exact lease it saw lapse: the token is a
// compare-and-swap, so of two retries that both saw the lease lapse, one
// wins, and the attempt count it writes is exact.
//
// model: pkg/idem/model/idem.pml mirrors these two conditions (inline
// claim); change both together.
const (
	condFresh    = "attribute_not_exists(pk) OR expires_at < :now_s"
	condTakeover = condFresh + " OR (#status = :in_progress AND lease_token = :seen AND lease_until <= :now_ms AND fingerprint = :fp)"
)

// The expressions as the SDK takes them, made once: the SDK only reads them.
var (
	exprFresh    = aws.String(condFresh)
	exprTakeover = aws.String(condTakeover)
	exprLease    = aws.String(condLease)
	exprLapse    = aws.String("SET lease_until = :zero, lease_token = :lapsed")
	namesStatus  = map[string]string{"#status": attrStatus}
)

// claim tries once to take the key for the work, fresh or from seen, the
// record last seen. It returns the lease it won, or else the record that
// stopped it (nil if that record has gone since).
//
// The claim may land and lose its answer, and the SDK send it again: the
// second put then fails its condition on the record the first one wrote.
// That record carries this claim's lease token, so it is read as won
// (model: idem.pml's "my own claim landed" branch after claim_op; its
// negative control NO_OWN_TOKEN shows the 409 this rule prevents).
func (s *Store) claim(ctx context.Context, c *call, seen *record) (*lease, *record, error) {
	d := s.opts.Lease
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	if d <= 0 {
		return nil, nil, fmt.Errorf("idem: no time left to claim the key: %w", context.DeadlineExceeded)
	}
	now := s.opts.Clock()
	put := s.claimPut(c, seen, statusInProgress, now, now.Add(d))
	l := &lease{pk: c.pk, token: token(put.Item), until: now.Add(d).UnixMilli(), duration: d, item: put.Item}
	takeover := put.ConditionExpression == exprTakeover
	err := s.misfit(retryConflicts(ctx, func(int) error {
		_, err := s.db.PutItem(ctx, putInput(put))
		return err
	}))
	if err == nil {
		c.claimed(takeover, seen, "won")
		return l, nil, nil
	}
	if ccf := conditionFailed(err); ccf != nil {
		got, err := s.seen(ctx, c.pk, ccf.Item)
		if err != nil {
			c.claimed(takeover, seen, "failed")
			return nil, nil, err
		}
		if got != nil && got.Status == statusInProgress && got.LeaseToken == l.token {
			c.event(evReadBack, attrCallKey, "claim")
			c.claimed(takeover, seen, "won")
			return l, nil, nil // this claim landed; only its answer was lost
		}
		c.claimed(takeover, seen, "lost")
		return nil, got, nil
	}
	if errors.Is(err, ErrMisconfigured) {
		c.claimed(takeover, seen, "failed")
		return nil, nil, err // the table itself refused the claim: nothing landed, no work ran
	}
	c.claimed(takeover, seen, "unknown")
	// An earlier send may have landed (its answer lost, and a later one
	// refused or conflicting), or may still land: hand the claim back at
	// once rather than leave the request's own retries to wait out a lease
	// nobody holds.
	handed, found, herr := s.handBack(ctx, c.pk, put)
	switch {
	case herr != nil:
		return nil, nil, fmt.Errorf("idem: claim outcome unknown, and it could not be handed back (a lease it took runs out): %w (hand-back: %v)", err, herr) //nolint:errorlint // the claim's error is the answer; the hand-back's must not add its sentinel
	case !handed:
		return nil, found, nil // another's record, which this claim can no longer take
	case conflicted(err):
		return nil, nil, inFlight(err)
	}
	return nil, nil, fmt.Errorf("idem: claim outcome unknown, handed back with its lease lapsed (the retry takes over at once): %w", err)
}

// handBack ends a claim whose outcome is unknown: every send's answer was
// lost, and a send may still be in flight. A lapse cannot do it, since a
// claim that has not landed yet lands after the lapse and leaves a live
// lease that nobody holds. So it puts the claimed record already lapsed
// (in progress, lease_until 0, the lapsed token), under the claim's own
// condition or over the claim itself (in progress under its token): either
// way, no send of the claim can land after it, since the record it leaves
// fails the claim's condition, and the key is bound to the request, whose
// retry takes it over at once. It reports whether it handed the claim
// back, or else the record that stopped it. It is a release, bounded as
// releaseContext says.
//
// DoAtomic's unknown commit is handed back the same way: its put is a
// claim that writes the record completed (found completed under its own
// token, that commit landed).
//
// model: idem.pml's handback_op; its negative control HANDBACK_AS_LAPSE is
// the lapse this replaced.
func (s *Store) handBack(ctx context.Context, pk string, claim *types.Put) (handed bool, found *record, err error) {
	tok := token(claim.Item)
	item := maps.Clone(claim.Item)
	delete(item, attrResponse)
	delete(item, attrCompletedAt)
	item[attrStatus] = &types.AttributeValueMemberS{Value: statusInProgress}
	item[attrLeaseUntil] = number(0)
	item[attrLeaseToken] = &types.AttributeValueMemberS{Value: lapsedToken(tok)}
	put := &types.Put{
		TableName:                           claim.TableName,
		Item:                                item,
		ConditionExpression:                 aws.String("(" + *claim.ConditionExpression + ") OR (#status = :in_progress AND lease_token = :mine)"),
		ExpressionAttributeNames:            namesStatus,
		ExpressionAttributeValues:           leaseValues(tok, maps.Clone(claim.ExpressionAttributeValues)),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	hctx, cancel := releaseContext(ctx)
	defer cancel()
	err = resolve(hctx, func() error {
		return s.misfit(retryConflicts(hctx, func(int) error {
			_, err := s.db.PutItem(hctx, putInput(put))
			return err
		}))
	})
	c := s.callIn(ctx)
	if err == nil {
		c.event(evHandBack, attrResultKey, "handed")
		return true, nil, nil
	}
	if ccf := conditionFailed(err); ccf != nil {
		found, err = s.seen(hctx, pk, ccf.Item)
		if found != nil && found.Status == statusInProgress && found.LeaseToken == lapsedToken(tok) {
			c.event(evReadBack, attrCallKey, "hand_back")
			c.event(evHandBack, attrResultKey, "handed")
			return true, nil, err // an earlier send of this hand-back landed
		}
		if err != nil {
			c.event(evHandBack, attrResultKey, "failed")
		} else {
			c.event(evHandBack, attrResultKey, "lost")
		}
		return false, found, err
	}
	c.event(evHandBack, attrResultKey, "failed")
	return false, nil, fmt.Errorf("idem: hand-back: %w", err)
}

// claimPut is the conditional put that takes the key for the call from seen,
// the record last seen: a record in status, with a fresh lease token, under
// the fresh condition, or the takeover condition where seen is this
// request's lapsed lease.
func (s *Store) claimPut(c *call, seen *record, status string, now, leaseUntil time.Time) *types.Put {
	r := record{
		PK:          c.pk,
		Scope:       c.req.Scope,
		Key:         c.req.Key,
		Fingerprint: c.req.Fingerprint,
		Status:      status,
		LeaseToken:  rand.Text(),
		LeaseUntil:  leaseUntil.UnixMilli(),
		ExpiresAt:   now.Add(s.opts.TTL).Unix(),
		Attempts:    1,
		CreatedAt:   now.UnixMilli(),
	}
	takeover := seen != nil && next(seen, c.req.Fingerprint, now) == stepTakeover
	if takeover {
		r.Attempts, r.CreatedAt = seen.Attempts+1, seen.CreatedAt
	}
	v := new(struct { // the put and its value, allocated together
		put types.Put
		now types.AttributeValueMemberN
	})
	v.now.Value = strconv.FormatInt(now.Unix(), 10)
	put := &v.put
	*put = types.Put{
		TableName:                           &s.table,
		Item:                                r.item(),
		ConditionExpression:                 exprFresh,
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now_s": &v.now},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if takeover {
		put.ConditionExpression = exprTakeover
		put.ExpressionAttributeNames = namesStatus
		put.ExpressionAttributeValues[":in_progress"] = &types.AttributeValueMemberS{Value: statusInProgress}
		put.ExpressionAttributeValues[":seen"] = &types.AttributeValueMemberS{Value: seen.LeaseToken}
		put.ExpressionAttributeValues[":now_ms"] = number(now.UnixMilli())
		put.ExpressionAttributeValues[":fp"] = &types.AttributeValueMemberS{Value: c.req.Fingerprint}
	}
	return put
}

func putInput(p *types.Put) *dynamodb.PutItemInput {
	return &dynamodb.PutItemInput{
		TableName:                           p.TableName,
		Item:                                p.Item,
		ConditionExpression:                 p.ConditionExpression,
		ExpressionAttributeNames:            p.ExpressionAttributeNames,
		ExpressionAttributeValues:           p.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: p.ReturnValuesOnConditionCheckFailure,
	}
}

func token(item map[string]types.AttributeValue) string {
	v, _ := item[attrLeaseToken].(*types.AttributeValueMemberS)
	return v.Value
}

// seen decodes the item a failed condition returned; an engine that does not
// return it costs one consistent read more.
func (s *Store) seen(ctx context.Context, pk string, item map[string]types.AttributeValue) (*record, error) {
	if len(item) > 0 {
		return decodeRecord(item)
	}
	return s.read(ctx, pk)
}

// read returns the record with a consistent read, or nil if there is none.
func (s *Store) read(ctx context.Context, pk string) (*record, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: pk}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("idem: read record: %w", s.misfit(err))
	}
	return decodeRecord(out.Item)
}

// poll waits one interval, never past until, then reads the record again.
func (s *Store) poll(ctx context.Context, pk string, until time.Time) (*record, error) {
	t := time.NewTimer(min(s.opts.PollInterval, time.Until(until)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("idem: waiting for the request in progress: %w", ctx.Err())
	case <-t.C:
	}
	return s.read(ctx, pk)
}
