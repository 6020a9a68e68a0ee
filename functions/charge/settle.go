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
// request's fingerprint),
// and the charge keeps an attempt marker in ChargesTable from its first
// provider call until its commit, which deletes it. A retry that finds the
// marker knows an earlier attempt may have charged: once searchLag has
// passed since that attempt (search is eventually consistent), it looks the
// intent up by its metadata and answers from what it finds. Only when the
// search finds nothing after a saved 500 does it create again, under the
// next downstream key (MetaGeneration counts them): the 500 had no effect.

// Metadata names the charge sets on every intent.
const (
	MetaOperation  = "idem_operation"
	MetaRequest    = "idem_request"
	MetaGeneration = "idem_generation"
)

// searchLag is how long after an attempt a search is trusted to find its
// intent. Stripe: "under normal operating conditions, data is searchable in
// less than a minute"; five is a margin for conditions that are not normal.
const searchLag = 5 * time.Minute

// markerPrefix makes a marker's sort key, which no charge id can be ("#" is
// not in httpx.ID, so GET /charges/{id} never reads one).
const markerPrefix = "attempt#"

// marker is an operation with a provider call made and no result stored.
type marker struct {
	Scope      string `dynamodbav:"scope"`
	ID         string `dynamodbav:"charge_id"`
	Request    string `dynamodbav:"request"`    // the request's fingerprint
	Generation int    `dynamodbav:"generation"` // of the downstream key in use
	Since      int64  `dynamodbav:"since"`      // unix seconds of the first call under it
	Unknown    int64  `dynamodbav:"unknown"`    // unix seconds of a saved 5xx under it, or 0
}

func markerKey(scope, key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrScope:    &types.AttributeValueMemberS{Value: scope},
		attrChargeID: &types.AttributeValueMemberS{Value: markerPrefix + idem.KeyHash(scope, key)},
	}
}

// chargeDB is what the charge writes and reads itself in ChargesTable.
type chargeDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// begin returns the operation's marker: a new one for a first attempt,
// written by one conditional put that, when it loses, returns the marker an
// earlier attempt left (retry). A marker left by another request (an
// abandoned operation whose key expired and was reused) is replaced, under
// the next generation, so the provider never sees another request under a
// key it keeps.
func (s *server) begin(ctx context.Context, scope, key, request string) (m marker, retry bool, err error) {
	m = marker{Scope: scope, ID: markerPrefix + idem.KeyHash(scope, key), Request: request, Since: s.now().Unix()}
	item, err := attributevalue.MarshalMap(&m)
	if err != nil {
		return marker{}, false, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(charge_id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return m, false, nil
	case !errors.As(err, &ccf):
		return marker{}, false, fmt.Errorf("write the attempt marker: %w", err)
	}
	oldItem := ccf.Item
	if len(oldItem) == 0 { // an engine that does not return it
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: markerKey(scope, key), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return marker{}, false, fmt.Errorf("read the attempt marker: %w", err)
		}
		oldItem = out.Item
	}
	var old marker
	if err := attributevalue.UnmarshalMap(oldItem, &old); err != nil {
		return marker{}, false, err
	}
	if old.Request == request {
		return old, true, nil
	}
	m.Generation = old.Generation + 1
	return m, false, s.putMarker(ctx, m)
}

func (s *server) putMarker(ctx context.Context, m marker) error {
	item, err := attributevalue.MarshalMap(&m)
	if err != nil {
		return err
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		return fmt.Errorf("write the attempt marker: %w", err)
	}
	return nil
}

// errUnsettled: an earlier attempt's outcome cannot be known yet.
var errUnsettled = errors.New("an earlier attempt's outcome at the provider is not known yet")

// settle decides what a retry does about an earlier attempt (m): the intent
// that attempt made, if the search finds one; else m again, to create under
// its downstream key, or under the next one where a saved 5xx is proven to
// have had no effect. errUnsettled while the search cannot be trusted yet.
func (s *server) settle(ctx context.Context, m marker, op string) (*stripe.PaymentIntent, marker, error) {
	now := s.now()
	if now.Sub(time.Unix(m.Since, 0)) < searchLag {
		if m.Unknown != 0 {
			return nil, m, s.unsettled(m)
		}
		return nil, m, nil // the provider's key answers for so recent an attempt
	}
	found, err := s.payments.FindPaymentIntents(ctx, MetaOperation, op)
	if err != nil {
		_, terr := classify(nil, err)
		return nil, m, orTransient(terr, err)
	}
	for i := len(found) - 1; i >= 0; i-- { // the oldest first: the one charge
		if found[i].Metadata[MetaRequest] == m.Request {
			return found[i], m, nil
		}
	}
	if m.Unknown == 0 {
		return nil, m, nil
	}
	if now.Sub(time.Unix(m.Unknown, 0)) < searchLag {
		return nil, m, s.unsettled(m)
	}
	m.Generation, m.Since, m.Unknown = m.Generation+1, now.Unix(), 0
	return nil, m, s.putMarker(ctx, m)
}

func (s *server) unsettled(m marker) error {
	wait := time.Unix(max(m.Since, m.Unknown), 0).Add(searchLag).Sub(s.now())
	return &idem.TransientError{StatusCode: 503, Code: "provider_outcome_unknown", RetryAfter: max(wait, time.Second), Err: errUnsettled}
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
