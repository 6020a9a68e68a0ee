package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
)

// guarded is the Store's DynamoDB client: every error that says the table
// itself cannot be used becomes ErrMisconfigured, naming the table, so that
// no path takes it for a fault that a retry could get past.
//
// It also counts each call for the Store's call it was sent in, while
// anyone listens to that call (see call.start): a context lookup, which
// allocates nothing.
type guarded struct {
	api   DynamoDBAPI
	table string
	s     *Store
}

// sent counts one call for ctx's call, if it has one.
func (g guarded) sent(ctx context.Context) {
	if c := g.s.callIn(ctx); c != nil {
		c.calls.Add(1)
	}
}

// misconfigured are the error codes by which DynamoDB refuses the table or
// the caller rather than one request.
var misconfigured = map[string]bool{
	"ResourceNotFoundException":           true,
	"AccessDeniedException":               true,
	"UnrecognizedClientException":         true,
	"MissingAuthenticationTokenException": true,
	"InvalidSignatureException":           true,
}

// check costs a nil comparison on a call that succeeded: the errors.As
// target lives in refusal, which only a failed call reaches.
func (g guarded) check(err error, writes bool) error {
	if err == nil {
		return nil
	}
	return g.refusal(err, writes)
}

func (g guarded) refusal(err error, writes bool) error {
	var ae smithy.APIError
	if !errors.As(err, &ae) || !misconfigured[ae.ErrorCode()] {
		return err
	}
	if writes {
		return fmt.Errorf("%w: table %q or a table of the business writes: %s: %w", ErrMisconfigured, g.table, ae.ErrorCode(), err)
	}
	return fmt.Errorf("%w: table %q: %s: %w", ErrMisconfigured, g.table, ae.ErrorCode(), err)
}

func (g guarded) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	g.sent(ctx)
	out, err := g.api.PutItem(ctx, in, o...)
	return out, g.check(err, false)
}

func (g guarded) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	g.sent(ctx)
	out, err := g.api.GetItem(ctx, in, o...)
	return out, g.check(err, false)
}

func (g guarded) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	g.sent(ctx)
	out, err := g.api.UpdateItem(ctx, in, o...)
	return out, g.check(err, false)
}

func (g guarded) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	g.sent(ctx)
	out, err := g.api.TransactWriteItems(ctx, in, o...)
	return out, g.check(err, true)
}

// misfit names a ValidationException on a call on the record alone (the
// claim, a read, a lapse, a hand-back, a delete) as ErrMisconfigured: the
// record's item, its key and its expressions are this package's own and
// within every limit, so what DynamoDB refuses is the table's key schema
// (a hash key that is not the string AttrPK, or a sort key). Every call
// would be refused alike, so it is a definite failure, never an outcome
// to settle or a lease to hand back.
//
// It costs a nil comparison on a call that succeeded: refused's errors.As
// target, which escapes, is reached only by a failed call.
func (s *Store) misfit(err error) error {
	if err == nil || !refused(err) {
		return err
	}
	return fmt.Errorf("%w: table %q refuses the record (its hash key must be the string %q, with no sort key): ValidationException: %w", ErrMisconfigured, s.table, AttrPK, err)
}
