// An HTTP API Lambda that creates an order once per Idempotency-Key.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

type order struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

func parse(body []byte) (order, error) {
	var o order
	if err := json.Unmarshal(body, &o); err != nil || o.SKU == "" || o.Quantity < 1 {
		return o, &idemlambda.Refusal{StatusCode: 400, Code: "invalid_request", Message: "sku and a quantity are required"}
	}
	return o, nil
}

// handler creates the order in the table orders, in the same transaction
// that stores its response. The scope is the caller's JWT subject.
func handler(store *idem.Store, orders string) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return idemlambda.HTTPAPI(store, parse, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, order], tx *idem.Tx) (idem.Response, error) {
		id := "ord_" + rand.Text()[:16]
		tx.Add(types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(orders),
			Item: map[string]types.AttributeValue{
				"id":    &types.AttributeValueMemberS{Value: id},
				"owner": &types.AttributeValueMemberS{Value: req.Scope},
				"sku":   &types.AttributeValueMemberS{Value: req.Body.SKU},
			},
			ConditionExpression: aws.String("attribute_not_exists(id)"),
		}}, nil)
		body, err := json.Marshal(map[string]any{"id": id, "sku": req.Body.SKU, "quantity": req.Body.Quantity})
		return idem.Response{StatusCode: 201, Header: map[string]string{"Content-Type": "application/json"}, Body: body}, err
	})
}

func main() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	db, table := dynamodb.NewFromConfig(cfg), os.Getenv("IDEMPOTENCY_TABLE")
	if err := idem.CheckSingleRegion(ctx, db, table); errors.Is(err, idem.ErrMisconfigured) {
		log.Fatal(err) // a global table: two Regions could both run one key's work
	}
	store, err := idem.New(db, table)
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(handler(store, os.Getenv("ORDERS_TABLE")))
}
