package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
	if err := validateRequest(req); err != nil {
		return Result{}, err
	}
	pk := recordPK(req.Scope, req.Key)
	log := s.logger(ctx, req, "atomic")
	var tx Tx
	resp, err := work(ctx, &tx)
	if err != nil {
		return Result{}, err
	}
	respAV := encodeResponse(resp)
	conflicts := 0
	return s.decide(ctx, pk, req, log, func(old *record) (Result, *record, bool, error) {
		for {
			res, seen, done, retry, err := s.commitAtomic(ctx, pk, req, old, resp, respAV, tx.writes, log)
			if !retry || conflicts == maxConflictRetries {
				if retry {
					err, done = fmt.Errorf("idem: transaction kept conflicting: %w", err), true
				}
				return res, seen, done, err
			}
			conflicts++
			if err := sleep(ctx, backoff(conflicts)); err != nil {
				return Result{}, nil, true, err
			}
		}
	})
}

// commitAtomic makes one attempt. retry asks for the same attempt again after
// a TransactionConflict (the winner's transaction was in flight).
func (s *Store) commitAtomic(ctx context.Context, pk string, req Request, old *record, resp Response, respAV types.AttributeValue, writes []Write, log *slog.Logger) (res Result, seen *record, done, retry bool, err error) {
	put, token, err := s.claimPut(pk, req, old, 0)
	if err != nil {
		return Result{}, nil, true, false, err
	}
	now := s.opts.Clock()
	put.Item[attrStatus] = &types.AttributeValueMemberS{Value: StatusCompleted}
	put.Item[attrResponse] = respAV
	put.Item[attrCompletedAt] = number(now.UnixMilli())
	record := types.TransactWriteItem{Put: put}
	if err := checkTransaction(record, ItemSize(put.Item), writes); err != nil {
		return Result{}, nil, true, false, err
	}
	if len(writes) == 0 {
		return s.putCompleted(ctx, pk, put, token, resp, log)
	}
	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	items = append(items, record)
	for _, w := range writes {
		items = append(items, w.Item)
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:      items,
		ClientRequestToken: aws.String(requestToken(&lease{pk: pk, token: token}, 0)),
	})
	if err == nil {
		log.Info("idem", "outcome", "executed", "status", resp.StatusCode)
		return Result{Response: resp}, nil, true, false, nil
	}
	var cancelled *types.TransactionCanceledException
	if !errors.As(err, &cancelled) {
		// The outcome is unknown. Nothing was claimed, so nothing needs
		// releasing: the record says whether this transaction landed.
		r, rerr := s.read(context.WithoutCancel(ctx), pk)
		if rerr == nil && r != nil && r.LeaseToken == token {
			return Result{Response: r.response()}, nil, true, false, nil
		}
		return Result{}, nil, true, false, fmt.Errorf("idem: commit: %w", err)
	}
	reasons := cancelled.CancellationReasons
	if reasonCode(reasons, 0) == "ConditionalCheckFailed" {
		r, err := s.seen(context.WithoutCancel(ctx), pk, reasons[0].Item)
		if err != nil {
			return Result{}, nil, true, false, err
		}
		if r != nil && r.LeaseToken == token {
			// This very transaction committed; an SDK retry of it lost to
			// itself on an engine that ignores ClientRequestToken.
			return Result{Response: r.response()}, nil, true, false, nil
		}
		return Result{}, r, false, false, nil
	}
	for i := 1; i < len(reasons) && i <= len(writes); i++ {
		if reasonCode(reasons, i) != "ConditionalCheckFailed" {
			continue
		}
		w := writes[i-1]
		if w.OnConflict == nil {
			return Result{}, nil, true, false, fmt.Errorf("%w: write %d", ErrWriteConditionFailed, i-1)
		}
		decided, err := w.OnConflict(reasons[i].Item)
		if err != nil {
			return Result{}, nil, true, false, err
		}
		put.Item[attrResponse] = encodeResponse(decided)
		return s.putCompleted(ctx, pk, put, token, decided, log)
	}
	if onlyConflicts(reasons) {
		return Result{}, nil, false, true, err
	}
	return Result{}, nil, true, false, fmt.Errorf("idem: commit cancelled: %w", err)
}

// putCompleted writes the completed record alone, under the claim's
// condition: an operation with no business writes, or whose business write
// lost its condition.
func (s *Store) putCompleted(ctx context.Context, pk string, put *types.Put, token string, resp Response, log *slog.Logger) (Result, *record, bool, bool, error) {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           put.TableName,
		Item:                                put.Item,
		ConditionExpression:                 put.ConditionExpression,
		ExpressionAttributeNames:            put.ExpressionAttributeNames,
		ExpressionAttributeValues:           put.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		log.Info("idem", "outcome", "executed", "status", resp.StatusCode)
		return Result{Response: resp}, nil, true, false, nil
	case errors.As(err, &ccf):
		r, err := s.seen(context.WithoutCancel(ctx), pk, ccf.Item)
		if err == nil && r != nil && r.LeaseToken == token {
			return Result{Response: r.response()}, nil, true, false, nil
		}
		return Result{}, r, err != nil, false, err
	}
	return Result{}, nil, true, false, fmt.Errorf("idem: commit: %w", err)
}
