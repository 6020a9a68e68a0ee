package idem_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

func ExampleStore_Do() {
	ctx := context.Background()
	// In a Lambda: idem.New(dynamodb.NewFromConfig(cfg), os.Getenv("IDEMPOTENCY_TABLE")).
	store, db, err := idemtest.Open(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// The work's own table; in a deployment, one of the template's.
	orders := "orders-do"
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(orders), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("order_id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("order_id"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		log.Fatal(err)
	}
	fp, _ := idem.Fingerprint("POST", "/orders", []byte(`{"sku":"tea","qty":2}`), true)
	req := idem.Request{Scope: "user-42", Key: "3f1c0a52-order", Fingerprint: fp}

	createOrder := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		// The order is written in the same transaction as the response.
		tx.Add(types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(orders),
			Item: map[string]types.AttributeValue{
				"order_id": &types.AttributeValueMemberS{Value: "ord_1"},
			},
		}}, nil)
		return idem.Response{StatusCode: 201, Body: []byte(`{"order_id":"ord_1"}`)}, nil
	}

	for range 2 { // the client retries with the same key
		res, err := store.Do(context.Background(), req, createOrder)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Response.StatusCode, string(res.Response.Body), "replayed:", res.Replayed)
	}
	// Output:
	// 201 {"order_id":"ord_1"} replayed: false
	// 201 {"order_id":"ord_1"} replayed: true
}

func ExampleStore_Do_mismatch() {
	store, _, err := idemtest.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	ok := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 200}, nil
	}
	first, _ := idem.Fingerprint("POST", "/charges", []byte(`{"amount":100}`), true)
	second, _ := idem.Fingerprint("POST", "/charges", []byte(`{"amount":900}`), true)

	if _, err := store.Do(context.Background(), idem.Request{Scope: "user-42", Key: "k", Fingerprint: first}, ok); err != nil {
		log.Fatal(err)
	}
	_, err = store.Do(context.Background(), idem.Request{Scope: "user-42", Key: "k", Fingerprint: second}, ok)
	fmt.Println(errors.Is(err, idem.ErrFingerprintMismatch))
	// Output: true
}

func ExampleTx_Add() {
	ctx := context.Background()
	store, db, err := idemtest.Open(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// The work's own table; in a deployment, one of the template's.
	orders := "orders-add"
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(orders), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("order_id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("order_id"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		log.Fatal(err)
	}
	fp, _ := idem.Fingerprint("PUT", "/orders/ord_7", []byte(`{}`), true)

	// Two clients pick the same order id under different keys: the unique
	// condition lets one create it, and the other's ConflictFunc decides
	// the response that is stored for its key.
	put := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(orders),
			Item: map[string]types.AttributeValue{
				"order_id": &types.AttributeValueMemberS{Value: "ord_7"},
			},
			ConditionExpression: aws.String("attribute_not_exists(order_id)"),
		}}, func(old map[string]types.AttributeValue) (idem.Response, error) {
			return idem.Response{StatusCode: 409, Body: []byte(`{"error":"order_exists"}`)}, nil
		})
		return idem.Response{StatusCode: 201}, nil
	}
	for _, key := range []string{"key-a", "key-b"} {
		res, _ := store.Do(context.Background(), idem.Request{Scope: "user-42", Key: key, Fingerprint: fp}, put)
		fmt.Println(key, res.Response.StatusCode)
	}
	// Output:
	// key-a 201
	// key-b 409
}

func ExampleStore_DoAtomic() {
	ctx := context.Background()
	store, db, err := idemtest.Open(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// The work's own table; in a deployment, one of the template's.
	orders := "orders-atomic"
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(orders), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("order_id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("order_id"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		log.Fatal(err)
	}
	fp, _ := idem.Fingerprint("POST", "/orders", []byte(`{"sku":"tea"}`), true)
	req := idem.Request{Scope: "user-42", Key: "order-once", Fingerprint: fp}

	// Work with no effect outside DynamoDB: computed, then committed with
	// the record in one transaction. A replay is answered by the one call
	// that loses.
	create := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(orders),
			Item: map[string]types.AttributeValue{
				"order_id": &types.AttributeValueMemberS{Value: "ord_9"},
			},
		}}, nil)
		return idem.Response{StatusCode: 201, Body: []byte(`{"order_id":"ord_9"}`)}, nil
	}
	for range 2 {
		res, err := store.DoAtomic(context.Background(), req, create)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Response.StatusCode, string(res.Response.Body), "replayed:", res.Replayed)
	}
	// Output:
	// 201 {"order_id":"ord_9"} replayed: false
	// 201 {"order_id":"ord_9"} replayed: true
}

func ExampleStore_Do_traced() {
	// In a service: the SDK with an exporter (OTLP to the ADOT collector),
	// set with otel.SetTracerProvider, which Options.TracerProvider
	// defaults to. Here, spans kept in memory.
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	store, _, err := idemtest.Open(context.Background(), func(o *idem.Options) { o.TracerProvider = tp })
	if err != nil {
		log.Fatal(err)
	}
	fp, _ := idem.Fingerprint("POST", "/orders", []byte(`{"sku":"tea"}`), true)
	req := idem.Request{Scope: "user-42", Key: "5b0e-order", Fingerprint: fp}
	for range 2 { // the first request, then its retry
		if _, err := store.Do(context.Background(), req, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			return idem.Response{StatusCode: 201}, nil
		}); err != nil {
			log.Fatal(err)
		}
	}
	for _, s := range spans.Ended() {
		var outcome string
		for _, kv := range s.Attributes() {
			if kv.Key == "idem.outcome" {
				outcome = kv.Value.AsString()
			}
		}
		fmt.Print(s.Name(), " ", outcome, ":")
		for _, e := range s.Events() {
			fmt.Print(" ", e.Name, "=", e.Attributes[0].Value.AsString())
		}
		fmt.Println()
	}
	// Output:
	// idem.Do executed: idem.claim=won idem.work=ok idem.commit=committed
	// idem.Do replayed: idem.claim=lost
}
