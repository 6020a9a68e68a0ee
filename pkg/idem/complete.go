package idem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// ConflictFunc decides the response when a business write's condition fails
// (an order id already taken, say). old is the item that failed the
// condition, as DynamoDB returned it. The response is then stored, without
// any of the business writes; an error lapses the lease instead, and so
// does a response with a 5xx status, which a front door sends back as it is.
type ConflictFunc func(old map[string]types.AttributeValue) (Response, error)

// queued is one business write of an operation.
type queued struct {
	Item       types.TransactWriteItem
	OnConflict ConflictFunc // nil: a failed condition is ErrWriteConditionFailed
}

// Tx collects the business writes of one operation, to be committed in one
// TransactWriteItems with the completed record (with no writes, the record
// is put alone, with a PutItem).
type Tx struct {
	writes []queued
}

// Add queues a write. onConflict may be nil. When it is not, the write's
// ReturnValuesOnConditionCheckFailure is set to ALL_OLD, so that onConflict
// sees the item that stood in the way without another read.
//
// It sets that field on a copy of the action, never on the caller's: an
// action shared between operations is not written to.
func (tx *Tx) Add(item types.TransactWriteItem, onConflict ConflictFunc) {
	if onConflict != nil {
		all := types.ReturnValuesOnConditionCheckFailureAllOld
		switch {
		case item.Put != nil:
			p := *item.Put
			p.ReturnValuesOnConditionCheckFailure, item.Put = all, &p
		case item.Update != nil:
			u := *item.Update
			u.ReturnValuesOnConditionCheckFailure, item.Update = all, &u
		case item.Delete != nil:
			d := *item.Delete
			d.ReturnValuesOnConditionCheckFailure, item.Delete = all, &d
		case item.ConditionCheck != nil:
			cc := *item.ConditionCheck
			cc.ReturnValuesOnConditionCheckFailure, item.ConditionCheck = all, &cc
		}
	}
	tx.writes = append(tx.writes, queued{Item: item, OnConflict: onConflict})
}

// Len is the number of writes queued.
func (tx *Tx) Len() int { return len(tx.writes) }

// completion is a completed record to write with the business writes: for
// Do, the claimed record under the lease's fence; for DoAtomic, a new
// record under the claim's condition. The one commit path serves both.
type completion struct {
	pk     string
	token  string     // the lease token the completed record carries
	put    *types.Put // the completed record but its response, under its condition
	writes []queued
	// first is DoAtomic's: no call before it showed that the table takes
	// the record, as Do's claim has.
	first bool
}

// outcome is what a commit came to: committed (res, now or by an earlier
// send of the same commit), lost (the record's condition failed on a record
// that is not this one's: seen, nil if gone), or failed (err; unknown when
// the writes may have landed, sent then being the response it sent).
type outcome struct {
	res      Result
	lost     bool
	seen     *record
	err      error
	unknown  bool
	sent     Response
	fromWork bool // err is the ConflictFunc's own
}

// completion is Do's: the record as claimed, completed, fenced on the lease.
// It completes a copy: the claimed item went to the client, which may keep it.
func (s *Store) completion(l *lease, writes []queued) completion {
	item := maps.Clone(l.item)
	s.complete(item)
	return completion{pk: l.pk, token: l.token, writes: writes, put: &types.Put{
		TableName:                           &s.table,
		Item:                                item,
		ConditionExpression:                 exprLease,
		ExpressionAttributeNames:            namesStatus,
		ExpressionAttributeValues:           leaseValues(l.token, make(map[string]types.AttributeValue, 2)),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// complete marks a record item completed now, kept for the TTL from now.
func (s *Store) complete(item map[string]types.AttributeValue) {
	now := s.opts.Clock()
	v := new(struct {
		status types.AttributeValueMemberS
		n      [2]types.AttributeValueMemberN
	})
	v.status.Value = statusCompleted
	numbers(v.n[:], now.UnixMilli(), now.Add(s.opts.TTL).Unix())
	item[attrStatus], item[attrCompletedAt], item[AttrExpiresAt] = &v.status, &v.n[0], &v.n[1]
}

// maxConflictRetries bounds the retries of a write that meets a transaction
// in flight on one of its items (TransactionConflict).
const maxConflictRetries = 3

// commit writes the completed record with resp and the business writes, in
// one TransactWriteItems, or one PutItem when there are none. Every limit is
// checked first, a conflict's response included.
//
// The response is set in the completion's own item: it is sent only after
// that, and set again only after a send that was refused (a conflict's
// response).
func (s *Store) commit(ctx context.Context, c completion, resp Response) outcome {
	c.put.Item[attrResponse] = encodeResponse(resp)
	if err := checkTransaction(s.table, c.put, c.writes); err != nil {
		return outcome{err: err}
	}
	err := retryConflicts(ctx, func(attempt int) error { return s.send(ctx, c.put, c, attempt) })
	if err == nil {
		return outcome{res: Result{Response: resp}}
	}
	if ccf := conditionFailed(err); ccf != nil {
		return s.recordFailed(ctx, c, resp, ccf.Item)
	}
	switch cancelled := canceled(err); {
	case conflicted(err):
		// Nothing was written by the last send, but an earlier one may
		// have been (a put has no ClientRequestToken): settle it. Answered
		// as in progress, never as an internal error.
		return outcome{err: inFlight(err), unknown: true, sent: resp}
	case cancelled != nil:
		return s.cancelled(ctx, c, resp, cancelled.CancellationReasons, err)
	case refused(err):
		return outcome{err: s.refusedWrites(ctx, c, err)}
	case errors.Is(err, ErrMisconfigured):
		// Refused for a table (the record's or a business write's): an
		// earlier send may still have landed, so it is settled like any
		// unknown outcome, and definite only where the lapse proves it.
		return outcome{err: err, unknown: true, sent: resp}
	}
	return outcome{err: fmt.Errorf("idem: commit: %w", err), unknown: true, sent: resp}
}

// refusedWrites names a commit DynamoDB refused as written (a
// ValidationException, or a cancellation for a ValidationError), which
// wrote nothing: ErrInvalidWrite (the writes: two actions on one item,
// say), or ErrMisconfigured where the commit was the first call on the
// table (DoAtomic's) and a read of the record alone is refused too: the
// table's key schema does not fit the record. The read costs a call on
// this failure alone.
func (s *Store) refusedWrites(ctx context.Context, c completion, err error) error {
	if !c.first {
		return fmt.Errorf("%w: DynamoDB refused the writes: %w", ErrInvalidWrite, err)
	}
	if _, rerr := s.read(context.WithoutCancel(ctx), c.pk); errors.Is(rerr, ErrMisconfigured) {
		return fmt.Errorf("%w (the commit: %v)", rerr, err) //nolint:errorlint // the table's misfit is the answer; the commit's refusal is detail for the reader
	}
	return fmt.Errorf("%w: DynamoDB refused the writes: %w", ErrInvalidWrite, err)
}

// send makes one attempt. The ClientRequestToken is the same for every SDK
// retry of an attempt, so DynamoDB answers a retry of a transaction that
// committed with success; new for each attempt after a definite conflict.
func (s *Store) send(ctx context.Context, put *types.Put, c completion, attempt int) error {
	if len(c.writes) == 0 {
		_, err := s.db.PutItem(ctx, putInput(put))
		return err
	}
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:      transactItems(put, c.writes),
		ClientRequestToken: aws.String(requestToken(c.pk, c.token, attempt)),
	})
	return err
}

// transactItems are the actions of a transaction: the record's put first
// (nil: none, Function's pass-through), then the business writes.
func transactItems(record *types.Put, writes []queued) []types.TransactWriteItem {
	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	if record != nil {
		items = append(items, types.TransactWriteItem{Put: record})
	}
	for _, w := range writes {
		items = append(items, w.Item)
	}
	return items
}

// failedWrite is the index of the first of n business writes whose
// condition failed in a cancelled transaction's reasons, where the writes
// start at reasons[first]; -1 if none did.
func failedWrite(reasons []types.CancellationReason, first, n int) int {
	for i := range n {
		if reasonCode(reasons, first+i) == "ConditionalCheckFailed" {
			return i
		}
	}
	return -1
}

// cancelled reads a cancelled transaction, which committed nothing. Its
// reasons are in the order of its items: the record first.
func (s *Store) cancelled(ctx context.Context, c completion, sent Response, reasons []types.CancellationReason, err error) outcome {
	if reasonCode(reasons, 0) == "ConditionalCheckFailed" {
		return s.recordFailed(ctx, c, sent, reasons[0].Item)
	}
	if i := failedWrite(reasons, 1, len(c.writes)); i >= 0 {
		return s.businessConflict(ctx, c, i, reasons[i+1].Item)
	}
	for i := range reasons {
		if reasonCode(reasons, i) == "ValidationError" {
			return outcome{err: s.refusedWrites(ctx, c, err)} // refused as written: the same again
		}
	}
	return outcome{err: fmt.Errorf("idem: commit cancelled: %w", err)}
}

// recordFailed reads a failed record condition. Completed under this
// completion's own token: an earlier send of this same commit landed and
// only its answer was lost (the SDK resent a put, which has no
// ClientRequestToken); the answer is the stored response, with the cookies
// of sent, the response the commit sent. Anything else: lost to another
// request.
//
// model: pkg/idem/model/idem.pml's settle mirrors it; change both together.
func (s *Store) recordFailed(ctx context.Context, c completion, sent Response, item map[string]types.AttributeValue) outcome {
	r, err := s.seen(context.WithoutCancel(ctx), c.pk, item)
	switch {
	case err != nil:
		return outcome{err: fmt.Errorf("idem: commit outcome unknown: %w", err), unknown: true, sent: sent}
	case r != nil && r.Status == statusCompleted && r.LeaseToken == c.token:
		s.callIn(ctx).event(evReadBack, attrCallKey, "commit")
		return outcome{res: Result{Response: withCookiesOf(r.response(), sent)}}
	}
	return outcome{lost: true, seen: r}
}

// businessConflict hands a failed business condition to its ConflictFunc and
// commits the response it decides, without any business write.
func (s *Store) businessConflict(ctx context.Context, c completion, i int, old map[string]types.AttributeValue) outcome {
	w := c.writes[i]
	if w.OnConflict == nil {
		return outcome{err: fmt.Errorf("%w: write %d", ErrWriteConditionFailed, i)}
	}
	resp, err := w.OnConflict(old)
	call := s.callIn(ctx)
	if err != nil {
		call.event(evConflict, attrResultKey, "error")
		return outcome{err: err, fromWork: true}
	}
	if resp.StatusCode >= 500 {
		call.event(evConflict, attrResultKey, "unstored")
		return outcome{err: &unstored{resp: resp}} // a 5xx is never stored
	}
	call.event(evConflict, attrResultKey, "response")
	return s.commit(ctx, completion{pk: c.pk, token: c.token, put: c.put}, resp)
}

// retryConflicts sends a write again, a bounded number of times, while it
// meets a transaction in flight on one of its items: a cancellation for
// TransactionConflict alone, or TransactionConflictException, which the SDK
// does not retry. It returns the last answer.
func retryConflicts(ctx context.Context, send func(attempt int) error) error {
	for attempt := 0; ; attempt++ {
		err := send(attempt)
		if !conflicted(err) || attempt == maxConflictRetries {
			return err
		}
		if serr := sleep(ctx, backoff(attempt)); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

func conflicted(err error) bool {
	if err == nil {
		return false
	}
	var tce *types.TransactionConflictException
	if errors.As(err, &tce) {
		return true
	}
	cancelled := canceled(err)
	return cancelled != nil && onlyConflicts(cancelled.CancellationReasons)
}

// conditionFailed is the failed condition in err, or nil. The target lives
// here, not in the callers, so a call that succeeds does not allocate it.
func conditionFailed(err error) *types.ConditionalCheckFailedException {
	var ccf *types.ConditionalCheckFailedException
	if err != nil && errors.As(err, &ccf) {
		return ccf
	}
	return nil
}

// canceled is the cancelled transaction in err, or nil.
func canceled(err error) *types.TransactionCanceledException {
	var tce *types.TransactionCanceledException
	if err != nil && errors.As(err, &tce) {
		return tce
	}
	return nil
}

// inFlight is the answer to a write that kept meeting a transaction in
// flight: in progress, never an internal error. Nothing was written.
func inFlight(err error) error {
	return fmt.Errorf("%w (%w)", &InProgressError{RetryAfter: time.Second}, err)
}

// refused reports a ValidationException: DynamoDB refused the request as
// written (two actions on one item, say), so nothing was written, and a
// retry of the same writes would be refused again.
func refused(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException"
}

func requestToken(pk, token string, attempt int) string {
	var buf [256]byte
	b := append(append(append(append(buf[:0], pk...), 0), token...), 0)
	sum := sha256.Sum256(strconv.AppendInt(b, int64(attempt), 10))
	var h [36]byte // 36 characters, DynamoDB's maximum
	hex.Encode(h[:], sum[:18])
	return string(h[:])
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
	return base/2 + rand.N(base) //nolint:gosec // G404: jitter that spreads retries, not a secret
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

// unstored is a final 5xx that a ConflictFunc decided: never stored, the
// lease lapsed. Its Response method hands it to a front door, which sends
// it as it is.
type unstored struct{ resp Response }

func (e *unstored) Error() string {
	return "idem: the conflict's response is " + strconv.Itoa(e.resp.StatusCode) + "; not stored"
}

func (e *unstored) Response() Response { return e.resp }
