// Package orders is a Lambda of one's own, built on pkg/idem: it creates an
// order once per idempotency key.
package orders

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

// Table is the orders table, as the Lambda's template declares it.
var Table = dynamodb.CreateTableInput{
	TableName:            aws.String("orders"),
	AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
	KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
}

// Service creates orders in the table Orders.
type Service struct {
	Store  *idem.Store
	Orders string
}

// Create creates order id for caller, once per key.
func (s Service) Create(ctx context.Context, caller, key, id string) (idem.Result, error) {
	body := []byte(`{"id":"` + id + `"}`)
	fp, err := idem.Fingerprint("POST", "/orders", body, true)
	if err != nil {
		return idem.Result{}, err
	}
	return s.Store.Do(ctx, idem.Request{Scope: caller, Key: key, Fingerprint: fp}, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(types.TransactWriteItem{Put: &types.Put{
			TableName:           aws.String(s.Orders),
			Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
			ConditionExpression: aws.String("attribute_not_exists(id)"),
		}}, nil)
		return idem.Response{StatusCode: 201, Body: body}, nil
	})
}
