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

// errCompleted refuses a lapse of a completed key, which would undo nothing.
var errCompleted = fmt.Errorf("%w: the key is completed", ErrWrongState)

// KeyRecord is a key's record as an operator sees it. Inspect returns it;
// Lapse and Delete act on exactly the record it was read as.
type KeyRecord struct {
	Scope, Key, KeyHash string
	Status              string // "IN_PROGRESS" or "COMPLETED"
	Attempts            int
	LeaseUntil          time.Time // zero once lapsed
	ExpiresAt           time.Time // when TTL may delete it
	CreatedAt           time.Time
	CompletedAt         time.Time // zero while in progress
	// Response is the stored response; nil while in progress.
	Response *Response

	pk, token string
}

// LeaseLeft is how long the holder's lease still runs at now; 0 if over.
func (r *KeyRecord) LeaseLeft(now time.Time) time.Duration {
	if r.Status != statusInProgress || !r.LeaseUntil.After(now) {
		return 0
	}
	return r.LeaseUntil.Sub(now)
}

// Inspect reads the record of (scope, key) with a consistent read. An
// expired record, which TTL has not deleted yet, is no record.
func (s *Store) Inspect(ctx context.Context, scope, key string) (*KeyRecord, error) {
	if err := validateScope(scope); err != nil {
		return nil, err
	}
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	r, err := s.read(ctx, recordPK(scope, key))
	if err != nil {
		return nil, err
	}
	if r == nil || r.expired(s.opts.Clock()) {
		return nil, ErrNoRecord
	}
	return keyRecord(r), nil
}

func keyRecord(r *record) *KeyRecord {
	k := &KeyRecord{
		Scope: r.Scope, Key: r.Key, KeyHash: KeyHash(r.Scope, r.Key), Status: r.Status, Attempts: r.Attempts,
		ExpiresAt: time.Unix(r.ExpiresAt, 0), CreatedAt: time.UnixMilli(r.CreatedAt),
		pk: r.PK, token: r.LeaseToken,
	}
	if r.LeaseUntil > 0 {
		k.LeaseUntil = time.UnixMilli(r.LeaseUntil)
	}
	if r.CompletedAt > 0 {
		k.CompletedAt = time.UnixMilli(r.CompletedAt)
	}
	if r.Response != nil {
		resp := r.response()
		k.Response = &resp
	}
	return k
}

// Lapse ends the lease of an in-progress key whose holder is known dead,
// as the protocol's own lapse does after a failure: fenced on the lease
// token rec was read with, it sets lease_until to 0 and keeps the key bound
// to its request, whose next retry takes it over at once. If the holder was
// alive after all, it is fenced from then on (the lapse replaced its lease
// token): its commit fails with ErrLeaseLost and writes nothing, and the
// retry runs the work. A completed key is refused with ErrWrongState; a
// record taken over since it was read, with ErrRecordChanged. The change is
// logged with reason.
func (s *Store) Lapse(ctx context.Context, rec *KeyRecord, reason string) error {
	if reason == "" {
		return ErrNoReason
	}
	if rec.Status == statusCompleted {
		return errCompleted
	}
	lapsed, found, err := s.lapse(ctx, rec.pk, rec.token)
	switch {
	case err != nil:
		return err
	case !lapsed && found == nil:
		return ErrNoRecord
	case !lapsed && found.Status == statusCompleted && found.LeaseToken == rec.token:
		return errCompleted // its holder committed before the lapse
	case !lapsed:
		return ErrRecordChanged
	}
	s.opts.Logger.Warn("idem admin", "action", "lapse", "scope", rec.Scope, "key_hash", rec.KeyHash, "attempts", rec.Attempts, "reason", reason)
	return nil
}

// condCompletedAsRead deletes only the completed record the operator read:
// the lease token is the record's version, new with every claim.
const condCompletedAsRead = "#status = :completed AND lease_token = :mine"

// Delete removes a completed key, so that the key may be used again for
// another request, with reason in the log. It is refused for a key in
// progress (ErrWrongState: lapse it instead) and for a record that
// changed since rec was read (ErrRecordChanged). A replay of the deleted
// response is then no longer possible: a retry of the original request
// runs the work again, and this Store's cache no longer answers for the
// key. Other execution environments' caches (Options.Cache) may still
// replay it until their entry expires: disable the cache where deletes
// must take effect everywhere at once.
//
// Delete a key only once none of its holders can still be running (it
// completed longer ago than the function's timeout): a fenced slow holder,
// or a claim still in flight, would otherwise act on the key's next life,
// as on a record expired under it (model: idem.pml's Operator waits for
// that, the assumption DESIGN.md names).
//
// A delete whose answer is lost is read back: the SDK's resend carries the
// first send's ClientRequestToken, which DynamoDB answers with the first
// send's success; with every answer lost, Delete reads the key, and the
// record gone (or another under the key) is reported as deleted.
func (s *Store) Delete(ctx context.Context, rec *KeyRecord, reason string) error {
	if reason == "" {
		return ErrNoReason
	}
	if rec.Status != statusCompleted {
		return fmt.Errorf("%w: the key is in progress; lapse it instead", ErrWrongState)
	}
	s.cache.forget(rec.pk, rec.token)
	del := &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{{Delete: &types.Delete{
			TableName:                &s.table,
			Key:                      map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: rec.pk}},
			ConditionExpression:      aws.String(condCompletedAsRead),
			ExpressionAttributeNames: map[string]string{"#status": attrStatus},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":completed": &types.AttributeValueMemberS{Value: statusCompleted},
				":mine":      &types.AttributeValueMemberS{Value: rec.token},
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}},
		// This call's own: a stale rec sent again later is not mistaken
		// for a resend of this delete.
		ClientRequestToken: aws.String(rand.Text()),
	}
	err := retryConflicts(ctx, func(int) error {
		_, err := s.db.TransactWriteItems(ctx, del)
		return err
	})
	logged := []any{"action", "delete", "scope", rec.Scope, "key_hash", rec.KeyHash, "attempts", rec.Attempts, "reason", reason}
	switch cancelled := canceled(err); {
	case cancelled != nil && reasonCode(cancelled.CancellationReasons, 0) == "ConditionalCheckFailed":
		if found, err := s.seen(ctx, rec.pk, cancelled.CancellationReasons[0].Item); err != nil || found != nil {
			return errors.Join(ErrRecordChanged, err)
		}
		return ErrNoRecord
	case err != nil && !refused(err):
		// Every answer lost: read the record back.
		r, rerr := s.read(context.WithoutCancel(ctx), rec.pk)
		switch {
		case rerr != nil:
			return fmt.Errorf("idem: delete: outcome unknown, read the record again: %w", errors.Join(err, rerr))
		case r != nil && r.LeaseToken == rec.token:
			// Still there: not deleted yet, but a send still in
			// flight may land after this read.
			return fmt.Errorf("idem: delete: outcome unknown (the record was still there when read back), read it again: %w", err)
		}
		// Gone, or another record under the key: a completed record
		// changes only by being deleted or expiring, so the record rec
		// was read as is gone (a request claimed the key after it).
		s.opts.Logger.Warn("idem admin", append(logged, "answer_lost", true)...)
		return nil
	case err != nil:
		return fmt.Errorf("idem: delete: %w", s.misfit(err))
	}
	s.opts.Logger.Warn("idem admin", logged...)
	return nil
}
