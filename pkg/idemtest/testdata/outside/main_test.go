package main

import (
	"context"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idemtest"
)

func TestMain(m *testing.M) { os.Exit(idemtest.Main(m)) }

// newOrders is the handler on a fresh Store and orders table of DynamoDB Local.
func newOrders(t *testing.T) (*idemtest.Store, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)) {
	s := idemtest.NewStore(t)
	orders := idemtest.CreateTable(t, s.Client, &dynamodb.CreateTableInput{TableName: aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}}})
	return s, handler(s.Store, orders)
}

// post is POST /orders from alice, as API Gateway hands it over.
func post(key string) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{RouteKey: "POST /orders", Headers: map[string]string{"idempotency-key": key}, Body: `{"sku":"tea","quantity":2}`}
	req.RequestContext.HTTP.Method = "POST"
	req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}}}
	return req
}

func TestARetryGetsTheFirstAnswer(t *testing.T) {
	s, h := newOrders(t)
	first, _ := h(context.Background(), post("key-1"))
	again, _ := h(context.Background(), post("key-1"))
	if first.StatusCode != 201 || again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("first %d %s, retry %d %s %v: want the first answer replayed", first.StatusCode, first.Body, again.StatusCode, again.Body, again.Headers)
	}
	if n := s.Faults.Calls(idemtest.TransactWriteItems); n != 1 {
		t.Fatalf("%d commits, want 1: the retry ran the work again", n)
	}
}

func TestACommitWhoseAnswerIsLostIsNotDoneTwice(t *testing.T) {
	s, h := newOrders(t)
	s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer})
	first, _ := h(context.Background(), post("key-1"))
	again, _ := h(context.Background(), post("key-1"))
	if first.StatusCode != 201 || again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("first %d %s, retry %d %s: want the order created once, its lost answer recovered", first.StatusCode, first.Body, again.StatusCode, again.Body)
	}
	if s.Faults.Injected(idemtest.TransactWriteItems) != 1 || s.Faults.Calls(idemtest.TransactWriteItems) != 1 {
		t.Fatal("the commit was not sent once, its answer lost")
	}
}
