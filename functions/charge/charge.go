package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stripe/stripe-go/v82"

	"github.com/idemkeys/idem/functions/internal/httpx"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// Key attributes of ChargesTable and AttemptsTable in template.yaml; a test
// checks they agree.
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
	Status        string            `dynamodbav:"status" json:"status"` // the intent's status, or declined
	PaymentMethod string            `dynamodbav:"payment_method,omitempty" json:"payment_method,omitempty"`
	Customer      string            `dynamodbav:"customer,omitempty" json:"customer,omitempty"`
	Description   string            `dynamodbav:"description,omitempty" json:"description,omitempty"`
	Metadata      map[string]string `dynamodbav:"metadata,omitempty" json:"metadata,omitempty"`
	DeclineCode   string            `dynamodbav:"decline_code,omitempty" json:"decline_code,omitempty"`
	ErrorCode     string            `dynamodbav:"error_code,omitempty" json:"error_code,omitempty"`
	NextAction    string            `dynamodbav:"next_action,omitempty" json:"next_action,omitempty"`
	// ClientSecret lets the customer's client finish a requires_action
	// charge (Stripe.js handleNextAction). It is answered, never logged,
	// and never kept in the charge record (GET reads it afresh).
	ClientSecret string `dynamodbav:"-" json:"client_secret,omitempty"`
	Created      int64  `dynamodbav:"created" json:"created"`
	KeyHash      string `dynamodbav:"key_hash" json:"-"` // for operators: which key made it
	// Refreshed is when the status was last read from the provider (unix
	// milliseconds): by the create, or by a GET (refresh.go).
	Refreshed int64 `dynamodbav:"refreshed,omitempty" json:"-"`
}

type server struct {
	store      *idem.Store
	db         chargeDB
	table      string // ChargesTable
	attempts   string // AttemptsTable: the attempt markers
	payments   Payments
	scopeClaim string
	log        *slog.Logger
	now        func() time.Time
}

func (s *server) routes() httpx.Routes {
	return httpx.Routes{
		"POST /charges": idemlambda.HTTPAPI(s.store, parseChargeBody, s.create, func(o *idemlambda.Options[events.APIGatewayV2HTTPRequest]) {
			o.Scope, o.MaxBodyBytes, o.Logger, o.ProblemBase = idemlambda.JWTClaim(s.scopeClaim), maxBody, s.log, httpx.ProblemBase
			o.JSON = true // parseChargeBody reads every body as JSON, whatever its Content-Type
		}),
		"GET /charges/{id}": s.get,
	}
}

// create charges once per Idempotency-Key: it resolves what to charge from
// the caller's own objects (once per operation: a retry reuses the payer its
// attempt marker keeps), settles what an earlier attempt may have left at
// the provider, creates the intent under a downstream key derived from
// (scope, key), and commits the charge with the response.
func (s *server) create(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, chargeBody], tx *idem.Tx) (idem.Response, error) {
	resp, err := s.charge(ctx, req, tx)
	return httpx.Stored(resp), err
}

// charge is create in the HTTP API's response type.
func (s *server) charge(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, chargeBody], tx *idem.Tx) (events.APIGatewayV2HTTPResponse, error) {
	c, amount := req.Body.req, req.Body.amount
	scope, key := req.Scope, req.Key
	fp, err := idem.Fingerprint(http.MethodPost, "/charges", []byte(req.Event.Body), true)
	if err != nil { // the parse step accepted it, so this is ours, not the client's
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("fingerprint the charge: %w", err)
	}
	m, retry, err := s.begin(ctx, scope, key, fp, func() (payer, error) { return resolvePayer(ctx, s.payments, scope, c) })
	if err != nil {
		return payerRefused(err)
	}
	who := m.payer()
	ch := s.newCharge(scope, key, c, amount, who)
	op := downstreamKey(scope, key, 0) // names the operation at the provider, whatever the generation
	var found *stripe.PaymentIntent
	if retry {
		if found, m, err = s.settle(ctx, m, op); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
	}
	a := answer{intent: found}
	if found == nil {
		a, err = classify(s.payments.CreatePaymentIntent(ctx, intentParams(c, amount, who, downstreamKey(scope, key, m.Generation), op, fp, m.Generation)))
	}
	switch {
	case err != nil:
		return events.APIGatewayV2HTTPResponse{}, err // lapsed: a retry asks the provider again
	case a.unknown != nil:
		return events.APIGatewayV2HTTPResponse{}, s.recordUnknown(ctx, m)
	}
	return s.record(ctx, tx, scope, key, &ch, a, a.fresh(found), asked{amount, c.Currency})
}

// asked is what the request asked the provider to charge.
type asked struct {
	amount   int64
	currency string
}

// answer is rec's answer to the request: rec's own, or, when the provider
// charged another amount or currency than the request asks (an intent the
// retry adopts from an attempt of another release, or of a body that
// decoded otherwise), 422: the key is bound to the charge the provider
// holds, not to this request, and the answer names that charge.
func (q asked) answer(rec *charge) events.APIGatewayV2HTTPResponse {
	if rec.ID == "" || rec.Amount == q.amount && rec.Currency == q.currency {
		return render(rec)
	}
	p := httpx.Problem(http.StatusUnprocessableEntity, "idempotency_key_reused", fmt.Sprintf(
		"the provider holds a charge of %d %s under this key, which is not what this request asks", rec.Amount, strings.ToUpper(rec.Currency)))
	p.Extra = map[string]any{"charge_id": rec.ID}
	return p.Response()
}

// record fills in ch from the provider's answer a (the amount, currency
// and status the provider holds, never the request's own) and adds it to
// the transaction, answering as q.answer does. An intent that this very
// call did not make (not fresh) may be one an earlier execution already
// committed (a same-request retry after the record expired): that record
// is the answer.
func (s *server) record(ctx context.Context, tx *idem.Tx, scope, key string, ch *charge, a answer, fresh bool, q asked) (events.APIGatewayV2HTTPResponse, error) {
	resp, stored := respond(ch, a)
	if !stored {
		s.commitMarkerOnly(tx, scope, key)
		return resp, nil
	}
	if !fresh {
		if prev, err := s.committed(ctx, ch); err != nil || prev != nil {
			if err != nil {
				return events.APIGatewayV2HTTPResponse{}, err
			}
			s.commitMarkerOnly(tx, scope, key)
			return q.answer(prev), nil
		}
	}
	if err := s.commit(tx, scope, key, ch, q); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return q.answer(ch), nil
}

// payerRefused answers a payer that resolvePayer could not resolve: 400 for
// a payment source that is not the caller's or a customer with no default
// method, and the error itself for anything else.
func payerRefused(err error) (events.APIGatewayV2HTTPResponse, error) {
	switch {
	case errors.Is(err, errNotYours):
		return httpx.ErrorResponse(http.StatusBadRequest, "payment_source_unknown", "no such payment_method or customer of yours"), nil
	case errors.Is(err, errNoDefaultMethod):
		return httpx.ErrorResponse(http.StatusBadRequest, "payment_method_required", "the customer has no default payment method; give payment_method"), nil
	}
	return events.APIGatewayV2HTTPResponse{}, err
}

// newCharge is the charge that (scope, key) asks for, before the provider's
// answer fills in its id and status.
func (s *server) newCharge(scope, key string, c chargeRequest, amount int64, who payer) charge {
	return charge{
		Scope: scope, Object: "charge", Amount: amount, Currency: c.Currency, PaymentMethod: who.paymentMethod, Customer: who.customer,
		Description: c.Description, Metadata: c.Metadata, Created: s.now().Unix(), KeyHash: idem.KeyHash(scope, key),
		Refreshed: s.now().UnixMilli(), // the create's answer is the provider's status now
	}
}

// commit adds to the transaction that completes the key the charge and
// the delete of the operation's marker. Should the charge meet a record of
// the same id, scope and operation (committed by an earlier execution of
// this request), that record is the answer (q.answer).
func (s *server) commit(tx *idem.Tx, scope, key string, ch *charge, q asked) error {
	item, err := attributevalue.MarshalMap(ch)
	if err != nil {
		return err
	}
	tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(charge_id)")}},
		func(old map[string]types.AttributeValue) (idem.Response, error) {
			prev, err := sameOperation(old, ch)
			if err != nil || prev == nil {
				return idem.Response{}, errors.Join(idem.ErrWriteConditionFailed, err)
			}
			return httpx.Stored(q.answer(prev)), nil
		})
	s.commitMarkerOnly(tx, scope, key)
	return nil
}

// commitMarkerOnly adds the delete of the operation's marker.
func (s *server) commitMarkerOnly(tx *idem.Tx, scope, key string) {
	tx.Add(types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.attempts), Key: markerKey(scope, key)}}, nil)
}

// committed reads the charge record ch's id already has, when it is this
// operation's (same id, scope and key hash); nil when there is none.
func (s *server) committed(ctx context.Context, ch *charge) (*charge, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		attrScope: &types.AttributeValueMemberS{Value: ch.Scope}, attrChargeID: &types.AttributeValueMemberS{Value: ch.ID},
	}})
	if err != nil {
		return nil, fmt.Errorf("read the charge record: %w", err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	prev, err := sameOperation(out.Item, ch)
	if err == nil && prev == nil {
		err = fmt.Errorf("charge %s is recorded for another operation", ch.ID)
	}
	return prev, err
}

// sameOperation is the stored charge item when it is ch's own operation's.
func sameOperation(item map[string]types.AttributeValue, ch *charge) (*charge, error) {
	var prev charge
	if err := attributevalue.UnmarshalMap(item, &prev); err != nil {
		return nil, err
	}
	if prev.Scope != ch.Scope || prev.ID != ch.ID || prev.KeyHash != ch.KeyHash {
		return nil, nil
	}
	return &prev, nil
}

// intentParams is the create: confirmed at once, card-like methods only
// (no redirect, so no return_url), off session for a saved method, and the
// operation's ids in the metadata for settlement.
func intentParams(c chargeRequest, amount int64, who payer, downstream, op, fp string, gen int) *stripe.PaymentIntentCreateParams {
	p := &stripe.PaymentIntentCreateParams{
		Amount: stripe.Int64(amount), Currency: stripe.String(c.Currency), Confirm: stripe.Bool(true),
		PaymentMethod: stripe.String(who.paymentMethod),
		AutomaticPaymentMethods: &stripe.PaymentIntentCreateAutomaticPaymentMethodsParams{
			Enabled: stripe.Bool(true), AllowRedirects: stripe.String("never"),
		},
	}
	if who.customer != "" {
		p.Customer = stripe.String(who.customer)
	}
	if who.offSession {
		p.OffSession = stripe.Bool(true)
	}
	if c.Description != "" {
		p.Description = stripe.String(c.Description)
	}
	for k, v := range c.Metadata {
		p.AddMetadata(k, v)
	}
	p.AddMetadata(MetaOperation, op)
	p.AddMetadata(MetaRequest, fp)
	p.AddMetadata(MetaGeneration, strconv.Itoa(gen))
	p.SetIdempotencyKey(downstream)
	return p
}

// respond fills in the charge from the answer and renders it; stored says
// whether the charge is written (a rejection writes none).
func respond(ch *charge, a answer) (events.APIGatewayV2HTTPResponse, bool) {
	switch {
	case a.rejected != nil:
		if a.rejected.Type == stripe.ErrorTypeIdempotency {
			// The provider holds another request under the downstream key.
			return httpx.ErrorResponse(http.StatusUnprocessableEntity, "idempotency_key_reused", a.rejected.Msg), false
		}
		return httpx.ErrorResponse(http.StatusBadRequest, "provider_rejected", a.rejected.Msg), false
	case a.declined != nil:
		declined(ch, a.declined.PaymentIntent, a.declined)
	case a.intent.Status == stripe.PaymentIntentStatusRequiresPaymentMethod || a.intent.Status == stripe.PaymentIntentStatusCanceled:
		declined(ch, a.intent, a.intent.LastPaymentError) // found by settlement
	default:
		ch.ID, ch.Status, ch.NextAction, ch.ClientSecret = a.intent.ID, string(a.intent.Status), "", ""
		ch.Amount, ch.Currency = a.intent.Amount, string(a.intent.Currency)
		if a.intent.NextAction != nil {
			ch.NextAction = string(a.intent.NextAction.Type)
		}
		if a.intent.Status == stripe.PaymentIntentStatusRequiresAction {
			ch.ClientSecret = a.intent.ClientSecret
		}
	}
	return render(ch), ch.ID != "" || ch.Status != "declined"
}

// render is the answer a charge gets: 402 problem details for a decline,
// 201 for a charge that succeeded, 202 for one that is not final.
func render(ch *charge) events.APIGatewayV2HTTPResponse {
	ch.Object = "charge"
	if ch.Status == "declined" {
		p := httpx.Problem(http.StatusPaymentRequired, "card_declined", "the card was declined ("+ch.DeclineCode+")")
		p.Extra = map[string]any{"decline_code": ch.DeclineCode, "provider_code": ch.ErrorCode, "charge_id": ch.ID}
		return p.Response()
	}
	status := http.StatusCreated
	if ch.Status != string(stripe.PaymentIntentStatusSucceeded) {
		status = http.StatusAccepted // not final: processing, requires_action
	}
	resp := httpx.JSON(status, ch)
	resp.Headers["Location"] = "/charges/" + ch.ID
	return resp
}

// declined fills in a decline: the decline_code when the provider gives one
// (card_declined), else the error's own code (expired_card, incorrect_cvc).
func declined(ch *charge, pi *stripe.PaymentIntent, e *stripe.Error) {
	ch.Status, ch.NextAction, ch.ClientSecret = "declined", "", ""
	if pi != nil {
		ch.ID = pi.ID
		if pi.Currency != "" { // the provider's, when its error object carries the intent whole
			ch.Amount, ch.Currency = pi.Amount, string(pi.Currency)
		}
	}
	if e != nil {
		ch.ErrorCode, ch.DeclineCode = string(e.Code), string(e.DeclineCode)
		if ch.DeclineCode == "" {
			ch.DeclineCode = ch.ErrorCode
		}
	}
}
