package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stripe/stripe-go/v82"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// How an unknown provider outcome is settled.
//
// The provider deduplicates on the downstream key for as long as it keeps
// the key (at least 24 hours), and saves whatever the first request under
// it answered once it began executing, a 500 included. Two cases are then
// beyond the key: a 500 saved under it (every retry replays the 500, and
// the intent may or may not exist), and a retry later than the provider
// keeps keys (our lease takeovers renew the record, so an operation can
// outlive the provider's key).
//
// So every intent carries the operation's id in its metadata (MetaOperation:
// its first downstream key, a digest of scope and key; MetaRequest, the
// request's fingerprint), and the charge keeps an attempt marker in
// AttemptsTable from its first provider call on; the commit marks it
// committed, with the intent it answered with, and keeps it, for its
// generation: a later request under the key, once the key's record is
// gone, is sent under the next downstream key. The marker keeps the payer
// resolved for the operation, so every retry sends the provider the same
// request under the key.
//
// A retry that finds a committed marker reads its intent by id. One that
// finds a marker not yet committed lists the intents created since the marker
// was written (listWindow), with Stripe's list API, which is consistent
// after the write, every page, and answers from the oldest whose metadata
// names the operation and the request. Search is never used: Stripe's
// search "can be up to an hour behind during outages", and a saved 500 is
// itself a sign of one; and search is not offered in every country. Only
// when the list finds nothing, unknownSettle after a saved 500, does the
// charge create again, under the next downstream key (MetaGeneration
// counts them): the 500 had no effect.

// Metadata names the charge sets on every intent.
const (
	MetaOperation  = "idem_operation"
	MetaRequest    = "idem_request"
	MetaGeneration = "idem_generation"
)

// unknownSettle is how long after a saved 500 the charge waits before it
// concludes, from a list that finds nothing, that the 500 had no effect.
// Stripe calls a 500's outcome indeterminate and says no more; the wait is
// a margin for an effect still being written when the 500 was answered.
const unknownSettle = time.Minute

// listWindow widens the list's created window on both sides, for the
// difference between this function's clock and the provider's.
const listWindow = 5 * time.Minute

// markerPrefix makes a marker's sort key, which no charge id can be ("#" is
// not in httpx.ID), should the two tables ever be mixed up.
const markerPrefix = "attempt#"

// marker is an operation with a provider call made and no result stored.
type marker struct {
	Scope      string `dynamodbav:"scope"`
	ID         string `dynamodbav:"charge_id"`
	Request    string `dynamodbav:"request"`    // the request's fingerprint
	Generation int    `dynamodbav:"generation"` // of the downstream key in use
	Since      int64  `dynamodbav:"since"`      // unix seconds of the first call under it
	Unknown    int64  `dynamodbav:"unknown"`    // unix seconds of a saved 5xx under it, or 0
	// Committed is when the operation committed (unix seconds, 0 before);
	// Intent is the intent it answered with, if any.
	Committed int64  `dynamodbav:"committed,omitempty"`
	Intent    string `dynamodbav:"intent,omitempty"`
	// The payer resolved for the operation, sent on every attempt.
	PaymentMethod string `dynamodbav:"payment_method,omitempty"`
	Customer      string `dynamodbav:"customer,omitempty"`
	OffSession    bool   `dynamodbav:"off_session,omitempty"`
}

func (m marker) payer() payer {
	return payer{paymentMethod: m.PaymentMethod, customer: m.Customer, offSession: m.OffSession}
}

func markerKey(scope, key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrScope:    &types.AttributeValueMemberS{Value: scope},
		attrChargeID: &types.AttributeValueMemberS{Value: markerPrefix + idem.KeyHash(scope, key)},
	}
}

// chargeDB is what the charge writes and reads itself in ChargesTable and
// AttemptsTable.
type chargeDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// begin returns the operation's marker. A marker this request left is a
// retry, with the payer it keeps. Otherwise resolve names the payer and a
// new marker is written by one conditional put that, when it loses, returns
// the marker a concurrent attempt left (retry, with its payer). A marker
// left by another request (an operation, abandoned or committed, whose
// key's record is gone and whose key is used again) is replaced, under the
// next generation, so the provider never sees another request under a key
// it keeps.
func (s *server) begin(ctx context.Context, scope, key, request string, resolve func() (payer, error)) (m marker, retry bool, err error) {
	old, err := s.readMarker(ctx, scope, key)
	if err != nil {
		return marker{}, false, err
	}
	if old != nil && old.Request == request && old.PaymentMethod != "" {
		return *old, true, nil
	}
	who, err := resolve()
	if err != nil {
		return marker{}, false, err
	}
	m = marker{Scope: scope, ID: markerPrefix + idem.KeyHash(scope, key), Request: request, Since: s.now().Unix(),
		PaymentMethod: who.paymentMethod, Customer: who.customer, OffSession: who.offSession}
	switch {
	case old != nil && old.Request == request: // written before markers kept the payer
		old.PaymentMethod, old.Customer, old.OffSession = m.PaymentMethod, m.Customer, m.OffSession
		return *old, true, s.putMarker(ctx, *old)
	case old != nil:
		m.Generation = old.Generation + 1
		return m, false, s.putMarker(ctx, m)
	}
	item, err := attributevalue.MarshalMap(&m)
	if err != nil {
		return marker{}, false, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.attempts), Item: item, ConditionExpression: aws.String("attribute_not_exists(charge_id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return m, false, nil
	case !errors.As(err, &ccf):
		return marker{}, false, fmt.Errorf("write the attempt marker: %w", err)
	}
	var lost marker // a concurrent attempt's
	if err := attributevalue.UnmarshalMap(ccf.Item, &lost); err != nil || len(ccf.Item) == 0 {
		return marker{}, false, errors.Join(errors.New("write the attempt marker: lost to another attempt"), err)
	}
	if lost.Request == request && lost.PaymentMethod != "" {
		return lost, true, nil
	}
	m.Generation = lost.Generation + 1
	return m, false, s.putMarker(ctx, m)
}

// readMarker reads the operation's marker, nil when there is none.
func (s *server) readMarker(ctx context.Context, scope, key string) (*marker, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.attempts), Key: markerKey(scope, key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("read the attempt marker: %w", err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	var m marker
	if err := attributevalue.UnmarshalMap(out.Item, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

func (s *server) putMarker(ctx context.Context, m marker) error {
	item, err := attributevalue.MarshalMap(&m)
	if err != nil {
		return err
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.attempts), Item: item}); err != nil {
		return fmt.Errorf("write the attempt marker: %w", err)
	}
	return nil
}

// errUnsettled: an earlier attempt's outcome cannot be known yet.
var errUnsettled = errors.New("an earlier attempt's outcome at the provider is not known yet")

// settle decides what a retry does about an earlier attempt (m): the intent
// that attempt made, if the list finds one; else m again, to create under
// its downstream key, or under the next one where a saved 5xx is proven to
// have had no effect. errUnsettled within unknownSettle of a saved 5xx.
func (s *server) settle(ctx context.Context, m marker, op string) (*stripe.PaymentIntent, marker, error) {
	now := s.now()
	if m.Intent != "" { // committed: its intent is known by id
		pi, err := s.payments.PaymentIntent(ctx, m.Intent)
		if err != nil {
			_, terr := classify(nil, err)
			return nil, m, orTransient(terr, err)
		}
		return pi, m, nil
	}
	found, err := s.find(ctx, m, op, now)
	switch {
	case err != nil:
		return nil, m, err
	case found != nil || m.Unknown == 0:
		return found, m, nil
	case now.Sub(time.Unix(m.Unknown, 0)) < unknownSettle:
		return nil, m, s.unsettled(m)
	}
	m.Generation, m.Since, m.Unknown = m.Generation+1, now.Unix(), 0
	return nil, m, s.putMarker(ctx, m)
}

// find lists the intents created from m's first call to now (listWindow
// wider on each side), of m's customer when it has one, every page, and
// returns the oldest whose metadata names the operation and m's request:
// the one charge, should a second ever have been made.
func (s *server) find(ctx context.Context, m marker, op string, now time.Time) (*stripe.PaymentIntent, error) {
	from := time.Unix(m.Since, 0).Add(-listWindow).Unix()
	until := now.Add(listWindow).Unix()
	var oldest *stripe.PaymentIntent
	for pi, err := range s.payments.ListPaymentIntents(ctx, from, until, m.Customer) {
		if err != nil {
			_, terr := classify(nil, err)
			return nil, orTransient(terr, err)
		}
		if pi.Metadata[MetaOperation] == op && pi.Metadata[MetaRequest] == m.Request && (oldest == nil || pi.Created <= oldest.Created) {
			oldest = pi // newest first: a later one of the same second is older
		}
	}
	return oldest, nil
}

func (s *server) unsettled(m marker) error {
	wait := time.Unix(m.Unknown, 0).Add(unknownSettle).Sub(s.now())
	return &idemlambda.TransientError{StatusCode: 503, Code: "provider_outcome_unknown", RetryAfter: max(wait, time.Second), Err: errUnsettled}
}

// recordUnknown marks that the provider saved a 5xx under m's key.
func (s *server) recordUnknown(ctx context.Context, m marker) error {
	if m.Unknown == 0 {
		m.Unknown = s.now().Unix()
		if err := s.putMarker(ctx, m); err != nil {
			return err
		}
	}
	return s.unsettled(m)
}

func orTransient(terr, err error) error {
	if terr != nil {
		return terr
	}
	return transient(502, "provider_unavailable", retrySoon, err)
}

// downstreamKey is the provider key of generation g of an operation.
func downstreamKey(scope, key string, g int) string {
	k := idem.DownstreamKey("charge", scope, key)
	if g > 0 {
		k += "-" + strconv.Itoa(g)
	}
	return k
}
