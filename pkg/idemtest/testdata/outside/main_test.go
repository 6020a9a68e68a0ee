package main

import (
	"context"
	"os"
	"testing"
	"time"

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
	if n := s.Faults.Commits(); n != 1 {
		t.Fatalf("%d orders committed, want 1", n)
	}
}

func TestACommitWhoseAnswerIsLostIsNotDoneTwice(t *testing.T) {
	s, h := newOrders(t)
	s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer}) // the commit, with the order's write
	first, _ := h(context.Background(), post("key-1"))
	again, _ := h(context.Background(), post("key-1"))
	if first.StatusCode != 201 || again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("first %d %s, retry %d %s: want the order created once, its lost answer recovered", first.StatusCode, first.Body, again.StatusCode, again.Body)
	}
	if s.Faults.Commits() != 1 {
		t.Fatalf("%d orders committed, want 1", s.Faults.Commits())
	}
}

func TestALambdaKilledWithItsCommitInFlightIsTakenOverOnce(t *testing.T) {
	s, h := newOrders(t)
	s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.CrashBefore})
	if !idemtest.Invoke(context.Background(), func(ctx context.Context) { h(ctx, post("key-1")) }) {
		t.Fatal("the invocation did not crash")
	}
	busy, _ := h(context.Background(), post("key-1")) // the client's retry, while the dead Lambda's lease runs
	s.Clock.Advance(30 * time.Second)                 // idem's default lease runs out
	retry, _ := h(context.Background(), post("key-1"))
	if busy.StatusCode != 409 || retry.StatusCode != 201 || s.Faults.Commits() != 1 {
		t.Fatalf("within the lease %d, after it %d %s, %d commits: want 409, then the order created once", busy.StatusCode, retry.StatusCode, retry.Body, s.Faults.Commits())
	}
}
