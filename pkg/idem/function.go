package idem

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// ErrNoKey: the event carries no idempotency key and FunctionOptions does
// not allow pass-through.
var ErrNoKey = errors.New("idem: event has no idempotency key")

// FunctionOptions configure Function.
type FunctionOptions[In any] struct {
	// Scope names the consumer (the function), as SQSOptions.Scope does:
	// its keys are its own. Required.
	Scope string
	// Key takes the idempotency key from the event: the typed form of
	// Powertools' event_key_jmespath. Required. "" is a missing key.
	Key func(in In) string
	// Fingerprint chooses what of the event makes two events the same
	// request (default: the whole event). Its value is hashed as JSON.
	Fingerprint func(in In) any
	// PassThrough runs the handler without idempotency for an event that
	// has no key, instead of failing with ErrNoKey. TxFrom(ctx) is usable
	// all the same: its writes commit in one transaction, without an
	// idempotency record, before the result is returned.
	PassThrough bool
	// Atomic runs the handler with Store.DoAtomic instead of Store.Do.
	Atomic bool
}

// Function wraps any typed Lambda handler (a Step Functions task, a direct
// invocation) so that it runs once per key: the first call runs h, stores
// its Out as JSON and returns it; a repeat returns the stored Out, decoded;
// a repeat of the key with another event fails with ErrFingerprintMismatch,
// a concurrent one with ErrInProgress. h adds its business writes to
// TxFrom(ctx); an error from h lapses the lease and is returned.
func Function[In, Out any](s *Store, h func(context.Context, In) (Out, error), optFns ...func(*FunctionOptions[In])) (func(context.Context, In) (Out, error), error) {
	var o FunctionOptions[In]
	for _, fn := range optFns {
		fn(&o)
	}
	if err := validateScope(o.Scope); err != nil {
		return nil, fmt.Errorf("%w: %w: FunctionOptions.Scope names the consumer", ErrInvalidOptions, err)
	}
	if o.Key == nil {
		return nil, fmt.Errorf("%w: FunctionOptions.Key takes the key from the event", ErrInvalidOptions)
	}
	if o.Fingerprint == nil {
		o.Fingerprint = func(in In) any { return in }
	}
	do := s.Do
	if o.Atomic {
		do = s.DoAtomic
	}
	return func(ctx context.Context, in In) (Out, error) {
		var out Out
		key := o.Key(in)
		if key == "" && o.PassThrough {
			return passThrough(ctx, s, h, in)
		}
		if key == "" {
			return out, ErrNoKey
		}
		what, err := json.Marshal(o.Fingerprint(in))
		if err != nil {
			return out, fmt.Errorf("%w: %v", ErrInvalidBody, err)
		}
		fp, err := Fingerprint("FUNCTION", o.Scope, what, true)
		if err != nil {
			return out, err
		}
		res, err := do(ctx, Request{Scope: o.Scope, Key: key, Fingerprint: fp}, func(ctx context.Context, tx *Tx) (Response, error) {
			v, err := h(context.WithValue(ctx, txKey{}, tx), in)
			if err != nil {
				return Response{}, err
			}
			body, err := json.Marshal(v)
			return Response{StatusCode: http.StatusOK, Body: body}, err
		})
		if err != nil {
			return out, err
		}
		err = json.Unmarshal(res.Response.Body, &out)
		return out, err
	}, nil
}

// passThrough runs h for a keyless event and commits its writes alone, in
// one transaction, checked against DynamoDB's limits first. A write whose
// condition fails with a ConflictFunc answers as on the keyed path: the
// conflict's response, decoded into Out.
func passThrough[In, Out any](ctx context.Context, s *Store, h func(context.Context, In) (Out, error), in In) (Out, error) {
	var tx Tx
	out, err := h(context.WithValue(ctx, txKey{}, &tx), in)
	if err != nil || len(tx.writes) == 0 {
		return out, err
	}
	if err := checkTransaction(s.table, nil, tx.writes); err != nil {
		return out, err
	}
	writes := &dynamodb.TransactWriteItemsInput{TransactItems: transactItems(nil, tx.writes), ClientRequestToken: aws.String(rand.Text())}
	err = retryConflicts(ctx, func(int) error {
		_, err := s.db.TransactWriteItems(ctx, writes)
		return err
	})
	cancelled := canceled(err)
	switch {
	case err == nil:
		return out, nil
	case cancelled != nil:
		i := failedWrite(cancelled.CancellationReasons, 0, len(tx.writes))
		if i < 0 {
			break
		}
		if tx.writes[i].OnConflict == nil {
			return out, fmt.Errorf("%w: write %d", ErrWriteConditionFailed, i)
		}
		resp, err := tx.writes[i].OnConflict(cancelled.CancellationReasons[i].Item)
		if err != nil {
			return out, err
		}
		var conflict Out
		return conflict, json.Unmarshal(resp.Body, &conflict)
	case refused(err):
		return out, fmt.Errorf("%w: DynamoDB refused the writes: %w", ErrInvalidWrite, err)
	}
	return out, fmt.Errorf("idem: pass-through writes: %w", err)
}
