package main

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/functions/internal/httpx"
	"github.com/idemkeys/idem/functions/internal/tracing"
	"github.com/idemkeys/idem/internal/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// Key attributes of OrdersTable in template.yaml; a test checks they agree.
const (
	attrScope   = "scope"
	attrOrderID = "order_id"
)

const maxBody = 64 << 10

// orderRequest is the body of POST /orders and PUT /orders/{order_id}.
type orderRequest struct {
	Items []lineItem `json:"items"`
	Note  string     `json:"note,omitempty"`
}

type lineItem struct {
	SKU      string `json:"sku" dynamodbav:"sku"`
	Quantity int    `json:"quantity" dynamodbav:"quantity"`
}

// order is a stored order and its representation in responses.
type order struct {
	Scope   string     `dynamodbav:"scope" json:"-"`
	ID      string     `dynamodbav:"order_id" json:"id"`
	Object  string     `dynamodbav:"-" json:"object"`
	Items   []lineItem `dynamodbav:"items" json:"items"`
	Note    string     `dynamodbav:"note,omitempty" json:"note,omitempty"`
	Status  string     `dynamodbav:"status" json:"status"`
	Created int64      `dynamodbav:"created" json:"created"`
	// TraceParent names the span that wrote the order, when traced
	// (tracing.Parent): the stream record's new image carries it to the
	// consumer that counts the order, which links to it. Never answered.
	TraceParent string `dynamodbav:"traceparent,omitempty" json:"-"`
}

// sameOrder says whether a PUT asks for the order that exists: the same
// line items, in the same order, and the same note, an absent note and an
// empty one being the same. It compares what the order means, not the
// request's bytes or its path, which a trailing slash or a custom
// domain's API mapping changes.
func sameOrder(o order, req orderRequest) bool {
	if o.Note != req.Note || len(o.Items) != len(req.Items) {
		return false
	}
	for i := range o.Items {
		if o.Items[i] != req.Items[i] {
			return false
		}
	}
	return true
}

var sku = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func parseOrder(body []byte) (orderRequest, error) {
	var o orderRequest
	if err := httpx.DecodeStrict(body, &o); err != nil {
		return o, httpx.Invalid("%v", err)
	}
	if len(o.Items) == 0 || len(o.Items) > 50 {
		return o, httpx.Invalid("items must hold 1 to 50 line items")
	}
	for i, it := range o.Items {
		if !sku.MatchString(it.SKU) {
			return o, httpx.Invalid("items[%d].sku must be 1 to 64 of letters, digits, '_', '-', '.'", i)
		}
		if it.Quantity < 1 || it.Quantity > 1000 {
			return o, httpx.Invalid("items[%d].quantity must be 1 to 1000", i)
		}
	}
	if len(o.Note) > 500 {
		return o, httpx.Invalid("note must be at most 500 bytes")
	}
	return o, nil
}

type server struct {
	store      *idem.Store
	db         orderDB
	table      string // OrdersTable
	scopeClaim string
	// fastPath commits POST /orders in one transaction (idem.DoAtomic): the
	// create has no effect outside DynamoDB, so nothing needs a lease.
	fastPath bool
	log      *slog.Logger
	now      func() time.Time
}

// orderDB is what the PUT and GET routes call directly.
type orderDB interface {
	httpx.Reader
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

func (s *server) routes() httpx.Routes {
	return httpx.Routes{
		"POST /orders": idemlambda.HTTPAPI(s.store, parseOrder, s.create, func(o *idemlambda.Options[events.APIGatewayV2HTTPRequest]) {
			o.Scope, o.MaxBodyBytes, o.Logger, o.Atomic, o.ProblemBase = idemlambda.JWTClaim(s.scopeClaim), maxBody, s.log, s.fastPath, httpx.ProblemBase
			o.JSON = true // parseOrder reads every body as JSON, whatever its Content-Type
		}),
		"PUT /orders/{order_id}": s.put,
		"GET /orders/{order_id}": s.get,
	}
}

func (s *server) newOrder(scope, id string, req orderRequest) order {
	return order{Scope: scope, ID: id, Object: "order", Items: req.Items, Note: req.Note, Status: "created", Created: s.now().Unix()}
}

// create makes a new order, once per Idempotency-Key: the order and the
// completed response commit in one transaction.
func (s *server) create(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, orderRequest], tx *idem.Tx) (idem.Response, error) {
	id := "ord_" + strings.ToLower(rand.Text()[:20])
	o := s.newOrder(req.Scope, id, req.Body)
	o.TraceParent = tracing.Parent(ctx) // the Store's span: the consumer links to it
	item, err := attributevalue.MarshalMap(&o)
	if err != nil {
		return idem.Response{}, err
	}
	tx.Add(types.TransactWriteItem{Put: &types.Put{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(order_id)"),
	}}, nil)
	resp := httpx.JSON(http.StatusCreated, o)
	resp.Headers["Location"] = "/orders/" + id
	return httpx.Stored(resp), nil
}

// put is natural idempotency, with no Idempotency-Key: the client picks the
// order id, and a unique condition on it makes the create happen once. The
// same body again is the same order (200); another body under that id is a
// conflict (409). One conditional PutItem decides, and returns the existing
// order when it loses.
func (s *server) put(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	scope, bodyBytes, refusal := httpapi.CheckRequest(&req, s.scopeClaim, maxBody)
	if refusal != nil {
		return httpx.Refused(refusal), nil
	}
	id := req.PathParameters["order_id"]
	if !httpx.ID.MatchString(id) {
		return httpx.ErrorResponse(http.StatusBadRequest, "invalid_request", "order_id must be 1 to 128 of letters, digits, '_', '-'"), nil
	}
	body, err := parseOrder(bodyBytes)
	if errors.As(err, &refusal) {
		return httpx.Refused(refusal), nil
	}
	if _, err := idem.Fingerprint(http.MethodPut, "/orders/{order_id}", bodyBytes, true); err != nil { // duplicate keys and the like
		return httpx.ErrorResponse(http.StatusBadRequest, "invalid_json", err.Error()), nil
	}
	o := s.newOrder(scope, id, body)
	o.TraceParent = tracing.Parent(ctx) // the invocation's span: the consumer links to it
	item, err := attributevalue.MarshalMap(&o)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(order_id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		resp := httpx.JSON(http.StatusCreated, o)
		resp.Headers["Location"] = "/orders/" + id
		return resp, nil
	case !errors.As(err, &ccf):
		s.log.Error("order: put", "error", err.Error())
		r := httpx.ErrorResponse(http.StatusServiceUnavailable, "internal_error", "the order could not be saved; PUT it again")
		r.Headers["Retry-After"] = "1"
		return r, nil
	}
	var existing order
	if err := attributevalue.UnmarshalMap(ccf.Item, &existing); err != nil || !sameOrder(existing, body) {
		return httpx.ErrorResponse(http.StatusConflict, "order_exists", "order "+id+" exists with different content"), nil
	}
	existing.Object = "order"
	return httpx.JSON(http.StatusOK, existing), nil
}

// get reads one of the caller's orders.
func (s *server) get(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	var o order
	own := httpx.OwnItems{DB: s.db, Table: s.table, Claim: s.scopeClaim, IDParam: "order_id", IDAttr: attrOrderID, Log: s.log}
	return own.Get(ctx, req, &o, func() any {
		o.Object = "order"
		return o
	}), nil
}
