package idem

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
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

// lease is a won claim: the right to run the work and commit until the
// lease ends, fenced by token.
type lease struct {
	pk       string
	token    string
	duration time.Duration
	item     map[string]types.AttributeValue // the record as claimed
}

// claim tries once to take the key. It returns the lease it won, or else the
// record that stopped it (nil if that record has gone since).
func (s *Store) claim(ctx context.Context, pk string, req Request, old *record) (*lease, *record, error) {
	d := s.opts.Lease
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	if d <= 0 {
		return nil, nil, fmt.Errorf("idem: no time left to claim the key: %w", context.DeadlineExceeded)
	}
	put, token, err := s.claimPut(pk, req, old, d)
	if err != nil {
		return nil, nil, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           put.TableName,
		Item:                                put.Item,
		ConditionExpression:                 put.ConditionExpression,
		ExpressionAttributeNames:            put.ExpressionAttributeNames,
		ExpressionAttributeValues:           put.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: put.ReturnValuesOnConditionCheckFailure,
	})
	if err == nil {
		return &lease{pk: pk, token: token, duration: d, item: put.Item}, nil, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, nil, fmt.Errorf("idem: claim: %w", err)
	}
	seen, err := s.seen(ctx, pk, ccf.Item)
	return nil, seen, err
}

// claimPut is the conditional put that takes the key for req from old, the
// record last seen: an in-progress record with a new lease of d, under the
// fresh condition, or the takeover condition where old is a lapsed lease.
// It returns the put and its lease token.
func (s *Store) claimPut(pk string, req Request, old *record, d time.Duration) (*types.Put, string, error) {
	now := s.opts.Clock()
	r := record{
		PK:          pk,
		Scope:       req.Scope,
		Key:         req.Key,
		Fingerprint: req.Fingerprint,
		Status:      StatusInProgress,
		LeaseToken:  rand.Text(),
		LeaseUntil:  now.Add(d).UnixMilli(),
		ExpiresAt:   now.Add(s.opts.TTL).Unix(),
		Attempts:    1,
		CreatedAt:   now.UnixMilli(),
	}
	takeover := old != nil && !old.expired(now) && old.Status == StatusInProgress
	if takeover {
		r.Attempts = old.Attempts + 1
	}
	item := r.item()
	put := &types.Put{
		TableName:                           &s.table,
		Item:                                item,
		ConditionExpression:                 aws.String(condFresh),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now_s": number(now.Unix())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if takeover {
		put.ConditionExpression = aws.String(condTakeover)
		put.ExpressionAttributeNames = map[string]string{"#status": attrStatus}
		put.ExpressionAttributeValues[":in_progress"] = &types.AttributeValueMemberS{Value: StatusInProgress}
		put.ExpressionAttributeValues[":seen"] = &types.AttributeValueMemberS{Value: old.LeaseToken}
		put.ExpressionAttributeValues[":now_ms"] = number(now.UnixMilli())
		put.ExpressionAttributeValues[":fp"] = &types.AttributeValueMemberS{Value: req.Fingerprint}
	}
	return put, r.LeaseToken, nil
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
		return nil, fmt.Errorf("idem: read record: %w", err)
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

// release gives the key up after a failure that committed nothing, so that a
// retry runs the work again (model: idem.pml's release mirrors it). It deletes the record only if it is still this
// lease's claim; otherwise it reports the record it found instead. It runs
// even when ctx is already done, since that is when a failure is likeliest.
func (s *Store) release(ctx context.Context, l *lease) (released bool, found map[string]types.AttributeValue, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                           &s.table,
		Key:                                 map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: l.pk}},
		ConditionExpression:                 aws.String("#status = :in_progress AND lease_token = :mine"),
		ExpressionAttributeNames:            map[string]string{"#status": attrStatus},
		ExpressionAttributeValues:           leaseValues(l),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return true, nil, nil
	case errors.As(err, &ccf):
		return false, ccf.Item, nil
	}
	return false, nil, fmt.Errorf("idem: release: %w", err)
}

// leaseValues are the values of the fencing condition, shared by the commit
// and the release.
func leaseValues(l *lease) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":in_progress": &types.AttributeValueMemberS{Value: StatusInProgress},
		":mine":        &types.AttributeValueMemberS{Value: l.token},
	}
}
