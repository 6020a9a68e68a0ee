package main

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stripe/stripe-go/v82"

	"github.com/idemkeys/idem/functions/internal/httpx"
)

// refreshEvery is how often at most a charge's status is read from the
// provider on GET. The provider's rate limit is the platform's, shared by
// every tenant's POST /charges: without a bound, one tenant polling one
// pending charge spends it all, and every tenant's charges answer
// provider_busy.
const refreshEvery = 5 * time.Second

// get reads one of the caller's charges. A charge whose status is not
// final (requires_action, processing) is read again from the provider, at
// most once per refreshEvery (refresh): a status that changed is written
// back, and a requires_action charge read from the provider carries its
// client secret. Otherwise, and should the provider not answer, the stored
// charge is answered as it is.
func (s *server) get(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	var ch charge
	own := httpx.OwnItems{DB: s.db, Table: s.table, Claim: s.scopeClaim, IDParam: "id", IDAttr: attrChargeID, Log: s.log}
	return own.Get(ctx, req, &ch, func() any {
		ch.Object = "charge"
		if !final(ch.Status) {
			s.refresh(ctx, &ch)
		}
		return ch
	}), nil
}

// final says whether a stored status can no longer change.
func final(status string) bool {
	return status == "declined" || status == string(stripe.PaymentIntentStatusSucceeded) || status == string(stripe.PaymentIntentStatusCanceled)
}

// refresh reads ch's intent from the provider, if no read of it was made
// within refreshEvery, and writes a status that moved back. Concurrent GETs
// of one charge make one read: each claims it with one conditional write
// of the read's time (refreshed), and only the one that wins reads.
func (s *server) refresh(ctx context.Context, ch *charge) {
	now := s.now()
	if now.Sub(time.UnixMilli(ch.Refreshed)) < refreshEvery || !s.claimRefresh(ctx, ch, now) {
		return
	}
	pi, err := s.payments.PaymentIntent(ctx, ch.ID)
	if err != nil {
		s.log.Warn("charge: status not refreshed from the provider", "error", sanitized(err).Error())
		return
	}
	was := *ch
	respond(ch, answer{intent: pi}) // a requires_action charge gets the secret the provider read carries
	if ch.Status == was.Status {
		return
	}
	item, err := attributevalue.MarshalMap(ch)
	if err == nil {
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item,
			ConditionExpression:       aws.String("#s = :was"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":was": &types.AttributeValueMemberS{Value: was.Status}},
		})
	}
	if err != nil {
		s.log.Warn("charge: refreshed status not written back", "error", err.Error())
	}
}

// claimRefresh writes now as ch's last read, on the condition that ch's
// status is still the one read and no read was claimed within
// refreshEvery; false when another GET claimed it first, or the write
// failed (then the provider is not asked either: its budget comes first).
func (s *server) claimRefresh(ctx context.Context, ch *charge, now time.Time) bool {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key: map[string]types.AttributeValue{
			attrScope: &types.AttributeValueMemberS{Value: ch.Scope}, attrChargeID: &types.AttributeValueMemberS{Value: ch.ID},
		},
		UpdateExpression:         aws.String("SET refreshed = :now"),
		ConditionExpression:      aws.String("#s = :was AND (attribute_not_exists(refreshed) OR refreshed <= :before)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":was":    &types.AttributeValueMemberS{Value: ch.Status},
			":now":    &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
			":before": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(-refreshEvery).UnixMilli(), 10)},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false
	case err != nil:
		s.log.Warn("charge: refresh not claimed", "error", err.Error())
		return false
	}
	ch.Refreshed = now.UnixMilli()
	return true
}
