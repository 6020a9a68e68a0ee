package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stripe/stripe-go/v82"

	"github.com/idemkeys/idem/functions/internal/app"
	"github.com/idemkeys/idem/pkg/idem"
)

// Key attributes of ChargesTable in template.yaml; a test checks they agree.
const (
	attrScope    = "scope"
	attrChargeID = "charge_id"
)

// maxBody bounds a request body; a charge needs a few hundred bytes.
const maxBody = 64 << 10

// charge is a stored charge and its representation in responses.
type charge struct {
	Scope         string            `dynamodbav:"scope" json:"-"`
	ID            string            `dynamodbav:"charge_id" json:"id"`
	Object        string            `dynamodbav:"-" json:"object"`
	Amount        int64             `dynamodbav:"amount" json:"amount"`
	Currency      string            `dynamodbav:"currency" json:"currency"`
	Status        string            `dynamodbav:"status" json:"status"` // succeeded, declined, or the provider's
	PaymentMethod string            `dynamodbav:"payment_method,omitempty" json:"payment_method,omitempty"`
	Customer      string            `dynamodbav:"customer,omitempty" json:"customer,omitempty"`
	Description   string            `dynamodbav:"description,omitempty" json:"description,omitempty"`
	Metadata      map[string]string `dynamodbav:"metadata,omitempty" json:"metadata,omitempty"`
	DeclineCode   string            `dynamodbav:"decline_code,omitempty" json:"decline_code,omitempty"`
	Created       int64             `dynamodbav:"created" json:"created"`
	KeyHash       string            `dynamodbav:"key_hash" json:"-"` // for operators: which key made it
}

type server struct {
	store      *idem.Store
	db         app.Reader
	table      string // ChargesTable
	payments   Payments
	scopeClaim string
	log        *slog.Logger
	now        func() time.Time
}

func (s *server) routes() app.Routes {
	return app.Routes{
		"POST /charges": s.store.HTTP(s.create, func(o *idem.HTTPOptions) {
			o.ScopeClaim, o.MaxBodyBytes, o.Validate, o.Logger = s.scopeClaim, maxBody, validateCharge, s.log
		}),
		"GET /charges/{id}": s.get,
	}
}

// create charges the payment method once per Idempotency-Key. The provider
// gets a key derived from (scope, key), so that a takeover after a crash
// between the provider's answer and the commit finds the first charge there
// instead of making a second one.
func (s *server) create(ctx context.Context, req events.APIGatewayV2HTTPRequest, tx *idem.Tx) (events.APIGatewayV2HTTPResponse, error) {
	c, amount, _ := parseCharge([]byte(req.Body)) // validated before the claim
	scope, key := idem.Scope(ctx), idem.Key(ctx)

	params := &stripe.PaymentIntentCreateParams{
		Amount:   stripe.Int64(amount),
		Currency: stripe.String(c.Currency),
		Confirm:  stripe.Bool(true),
	}
	if c.PaymentMethod != "" {
		params.PaymentMethod = stripe.String(c.PaymentMethod)
	} else {
		params.Customer = stripe.String(c.Customer)
	}
	if c.Description != "" {
		params.Description = stripe.String(c.Description)
	}
	for k, v := range c.Metadata {
		params.AddMetadata(k, v)
	}
	params.SetIdempotencyKey(idem.DownstreamKey("charge", scope, key))

	res, err := classify(s.payments.CreatePaymentIntent(ctx, params))
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err // released: a retry asks the provider again
	}
	if res.rejected != nil {
		status, code := http.StatusBadRequest, "provider_rejected"
		if res.rejected.Type == stripe.ErrorTypeIdempotency {
			// The key was released after a failure and reused with another
			// request: the provider holds the first one.
			status, code = http.StatusUnprocessableEntity, "idempotency_key_reused"
		}
		return idem.ErrorResponse(status, code, res.rejected.Msg), nil
	}

	ch := charge{
		Scope: scope, Object: "charge", Amount: amount, Currency: c.Currency,
		PaymentMethod: c.PaymentMethod, Customer: c.Customer, Description: c.Description, Metadata: c.Metadata,
		Created: s.now().Unix(), KeyHash: idem.KeyHash(scope, key),
	}
	status := http.StatusCreated
	var body any
	if d := res.declined; d != nil {
		ch.Status, ch.DeclineCode = "declined", string(d.DeclineCode)
		if d.PaymentIntent != nil {
			ch.ID = d.PaymentIntent.ID
		}
		status = http.StatusPaymentRequired
		body = map[string]any{"error": map[string]string{
			"code": "card_declined", "decline_code": string(d.DeclineCode), "message": d.Msg, "charge_id": ch.ID,
		}}
	} else {
		ch.ID, ch.Status = res.intent.ID, string(res.intent.Status)
		body = ch
	}
	if ch.ID != "" {
		item, err := attributevalue.MarshalMap(&ch)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		tx.Add(types.TransactWriteItem{Put: &types.Put{
			TableName:           aws.String(s.table),
			Item:                item,
			ConditionExpression: aws.String("attribute_not_exists(charge_id)"),
		}}, nil)
	}
	resp := app.JSON(status, body)
	if status == http.StatusCreated {
		resp.Headers["Location"] = "/charges/" + ch.ID
	}
	return resp, nil
}

// get reads one of the caller's charges.
func (s *server) get(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	var ch charge
	return app.GetOwn(ctx, req, s.db, s.table, s.scopeClaim, "id", attrChargeID, &ch, func() any {
		ch.Object = "charge"
		return ch
	}, s.log), nil
}
