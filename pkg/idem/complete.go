package idem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ConflictFunc decides the response when a business write's condition fails
// (an order id already taken, say). old is the item that failed the
// condition, as DynamoDB returned it. The response is then stored, without
// any of the business writes; an error releases the key instead.
type ConflictFunc func(old map[string]types.AttributeValue) (Response, error)

// Write is one business write of an operation.
type Write struct {
	Item       types.TransactWriteItem
	OnConflict ConflictFunc // nil: a failed condition is ErrWriteConditionFailed
}

// Tx collects the business writes of one operation, to be committed in one
// TransactWriteItems with the completed record.
type Tx struct {
	writes []Write
}

// Add queues a write. onConflict may be nil. When it is not, the write's
// ReturnValuesOnConditionCheckFailure is set to ALL_OLD, so that onConflict
// sees the item that stood in the way without another read.
func (tx *Tx) Add(item types.TransactWriteItem, onConflict ConflictFunc) {
	if onConflict != nil {
		all := types.ReturnValuesOnConditionCheckFailureAllOld
		switch {
		case item.Put != nil:
			item.Put.ReturnValuesOnConditionCheckFailure = all
		case item.Update != nil:
			item.Update.ReturnValuesOnConditionCheckFailure = all
		case item.Delete != nil:
			item.Delete.ReturnValuesOnConditionCheckFailure = all
		case item.ConditionCheck != nil:
			item.ConditionCheck.ReturnValuesOnConditionCheckFailure = all
		}
	}
	tx.writes = append(tx.writes, Write{Item: item, OnConflict: onConflict})
}

// Len is the number of writes queued.
func (tx *Tx) Len() int { return len(tx.writes) }

// maxConflictRetries bounds the retries of a transaction cancelled only by
// TransactionConflict (another write touching one of its items meanwhile).
const maxConflictRetries = 3

// run executes the work under the lease and commits what it produced.
func (s *Store) run(ctx context.Context, l *lease, work Work) (res Result, err error) {
	reserve := min(s.opts.CommitReserve, l.duration/4)
	workCtx, cancel := context.WithTimeout(ctx, l.duration-reserve)
	defer cancel()
	defer func() {
		// A panicking work is a crash as far as the protocol goes, but this
		// process survives it, so it can hand the key back at once instead
		// of leaving it to its lease.
		if p := recover(); p != nil {
			s.release(ctx, l)
			panic(p)
		}
	}()
	var tx Tx
	resp, err := work(workCtx, &tx)
	if err != nil {
		s.release(ctx, l)
		return Result{}, err
	}
	return s.commit(ctx, l, resp, tx.writes)
}

// commit writes the writes and the completed record together, fenced on the
// lease token.
func (s *Store) commit(ctx context.Context, l *lease, resp Response, writes []Write) (Result, error) {
	respAV := encodeResponse(resp)
	now := s.opts.Clock()
	values := leaseValues(l)
	values[":completed"] = &types.AttributeValueMemberS{Value: StatusCompleted}
	values[":response"] = respAV
	values[":expires_at"] = number(now.Add(s.opts.TTL).Unix())
	values[":now_ms"] = number(now.UnixMilli())
	update := &types.Update{
		TableName:                           &s.table,
		Key:                                 map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: l.pk}},
		UpdateExpression:                    aws.String("SET #status = :completed, #response = :response, expires_at = :expires_at, completed_at = :now_ms"),
		ConditionExpression:                 aws.String(condCommit),
		ExpressionAttributeNames:            map[string]string{"#status": attrStatus, "#response": attrResponse},
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	completedSize := ItemSize(l.item) + len(attrResponse) + valueSize(respAV) + len(attrCompletedAt) + numberSize(values[":now_ms"].(*types.AttributeValueMemberN).Value)
	if err := checkTransaction(types.TransactWriteItem{Update: update}, completedSize, writes); err != nil {
		s.release(ctx, l)
		return Result{}, err
	}
	if len(writes) == 0 {
		return s.commitRecord(ctx, l, resp, update)
	}

	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	items = append(items, types.TransactWriteItem{Update: update})
	for _, w := range writes {
		items = append(items, w.Item)
	}
	for attempt := 0; ; attempt++ {
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems:      items,
			ClientRequestToken: aws.String(requestToken(l, attempt)),
		})
		if err == nil {
			return Result{Response: resp}, nil
		}
		var cancelled *types.TransactionCanceledException
		if !errors.As(err, &cancelled) {
			return s.settleUnknown(ctx, l, err)
		}
		// A cancelled transaction committed nothing. Its reasons are in the
		// order of items: the record first.
		reasons := cancelled.CancellationReasons
		if reasonCode(reasons, 0) == "ConditionalCheckFailed" {
			return s.settle(ctx, l, reasons[0].Item)
		}
		for i := 1; i < len(reasons) && i <= len(writes); i++ {
			if reasonCode(reasons, i) == "ConditionalCheckFailed" {
				return s.businessConflict(ctx, l, i-1, writes[i-1], reasons[i].Item)
			}
		}
		if onlyConflicts(reasons) && attempt < maxConflictRetries {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return s.settleUnknown(ctx, l, err)
			}
			continue
		}
		s.release(ctx, l)
		return Result{}, fmt.Errorf("idem: commit cancelled, key released: %w", err)
	}
}

// condCommit is the fence: only the holder of the current lease completes.
//
// model: pkg/idem/model/idem.pml mirrors this condition (inline commit) and
// settle below; change both together.
const condCommit = "#status = :in_progress AND lease_token = :mine"

// commitRecord completes the record alone: an operation with no business
// writes, or one whose business write lost its condition. A single
// conditional UpdateItem is atomic on its own and costs half a transaction.
func (s *Store) commitRecord(ctx context.Context, l *lease, resp Response, u *types.Update) (Result, error) {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           u.TableName,
		Key:                                 u.Key,
		UpdateExpression:                    u.UpdateExpression,
		ConditionExpression:                 u.ConditionExpression,
		ExpressionAttributeNames:            u.ExpressionAttributeNames,
		ExpressionAttributeValues:           u.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return Result{Response: resp}, nil
	case errors.As(err, &ccf):
		return s.settle(ctx, l, ccf.Item)
	}
	return s.settleUnknown(ctx, l, err)
}

// businessConflict hands a failed business condition to its ConflictFunc and
// stores the response it decides, without any business write.
func (s *Store) businessConflict(ctx context.Context, l *lease, i int, w Write, old map[string]types.AttributeValue) (Result, error) {
	if w.OnConflict == nil {
		s.release(ctx, l)
		return Result{}, fmt.Errorf("%w: write %d", ErrWriteConditionFailed, i)
	}
	resp, err := w.OnConflict(old)
	if err != nil {
		s.release(ctx, l)
		return Result{}, err
	}
	return s.commit(ctx, l, resp, nil)
}

// settle decides what a failed record condition means. The record is either
// completed under this very lease, so this holder's own commit landed and
// only its answer was lost (a timeout, an SDK retry of a transaction that had
// committed), or it is someone else's now: fenced.
func (s *Store) settle(ctx context.Context, l *lease, item map[string]types.AttributeValue) (Result, error) {
	r, err := s.seen(context.WithoutCancel(ctx), l.pk, item)
	if err != nil {
		return Result{}, fmt.Errorf("idem: commit outcome unknown: %w", err)
	}
	if r != nil && r.Status == StatusCompleted && r.LeaseToken == l.token {
		return Result{Response: r.response()}, nil
	}
	return Result{}, ErrLeaseLost
}

// settleUnknown handles a commit whose outcome the client did not see (a
// timeout, a connection reset after every SDK retry). Releasing is itself
// fenced on the lease, so it races the commit safely: if the release wins,
// the commit cannot land afterwards and the failure is clean; if it finds the
// record changed, settle says whose change it was.
func (s *Store) settleUnknown(ctx context.Context, l *lease, cause error) (Result, error) {
	released, found, err := s.release(ctx, l)
	switch {
	case err != nil:
		return Result{}, fmt.Errorf("idem: commit outcome unknown, key left to its lease: %w", errors.Join(cause, err))
	case released:
		return Result{}, fmt.Errorf("idem: commit failed, key released: %w", cause)
	}
	return s.settle(ctx, l, found)
}

// requestToken is the transaction's ClientRequestToken: the same for every
// SDK retry of one attempt, so DynamoDB answers a retry of a transaction that
// committed with success; new for each attempt after a definite cancellation.
func requestToken(l *lease, attempt int) string {
	sum := sha256.Sum256([]byte(l.pk + "\x00" + l.token + "\x00" + strconv.Itoa(attempt)))
	return hex.EncodeToString(sum[:18]) // 36 characters, DynamoDB's maximum
}

func reasonCode(reasons []types.CancellationReason, i int) string {
	if i >= len(reasons) {
		return ""
	}
	return aws.ToString(reasons[i].Code)
}

func onlyConflicts(reasons []types.CancellationReason) bool {
	conflict := false
	for i := range reasons {
		switch reasonCode(reasons, i) {
		case "TransactionConflict":
			conflict = true
		case "", "None":
		default:
			return false
		}
	}
	return conflict
}

func backoff(attempt int) time.Duration {
	base := 10 * time.Millisecond << attempt
	return base/2 + rand.N(base)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
