package idem_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/pkg/idem"
)

// exampleTables makes an idempotency table and an orders table on the local
// engine. In a Lambda they come from template.yaml, their names from the
// environment, and the client from dynamodb.NewFromConfig.
func exampleTables() (db *dynamodb.Client, table, orders string) {
	db = dynamo.NewClient(os.Getenv(dynamo.EndpointEnv))
	suffix := strings.ToLower(rand.Text()[:8])
	for _, id := range []string{"IdempotencyTable", "OrdersTable"} {
		def, err := dynamo.ProjectTable(id)
		if err != nil {
			log.Fatal(err)
		}
		if err := def.Create(context.Background(), db, "example-"+id+"-"+suffix); err != nil {
			log.Fatal(err)
		}
	}
	return db, "example-IdempotencyTable-" + suffix, "example-OrdersTable-" + suffix
}

func ExampleStore_Do() {
	db, table, orders := exampleTables()
	store, err := idem.New(db, table)
	if err != nil {
		log.Fatal(err)
	}
	fp, _ := idem.Fingerprint("POST", "/orders", []byte(`{"sku":"tea","qty":2}`), true)
	req := idem.Request{Scope: "user-42", Key: "3f1c0a52-order", Fingerprint: fp}

	createOrder := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		// The order is written in the same transaction as the response.
		tx.Add(types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(orders),
			Item: map[string]types.AttributeValue{
				"scope":    &types.AttributeValueMemberS{Value: "user-42"},
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
	db, table, _ := exampleTables()
	store, _ := idem.New(db, table)
	ok := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 200}, nil
	}
	first, _ := idem.Fingerprint("POST", "/charges", []byte(`{"amount":100}`), true)
	second, _ := idem.Fingerprint("POST", "/charges", []byte(`{"amount":900}`), true)

	store.Do(context.Background(), idem.Request{Scope: "user-42", Key: "k", Fingerprint: first}, ok)
	_, err := store.Do(context.Background(), idem.Request{Scope: "user-42", Key: "k", Fingerprint: second}, ok)
	fmt.Println(errors.Is(err, idem.ErrFingerprintMismatch))
	// Output: true
}

func ExampleTx_Add() {
	db, table, orders := exampleTables()
	store, _ := idem.New(db, table)
	fp, _ := idem.Fingerprint("PUT", "/orders/ord_7", []byte(`{}`), true)

	// Two clients pick the same order id under different keys: the unique
	// condition lets one create it, and the other's ConflictFunc decides
	// the response that is stored for its key.
	put := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(orders),
			Item: map[string]types.AttributeValue{
				"scope":    &types.AttributeValueMemberS{Value: "user-42"},
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
	db, table, orders := exampleTables()
	store, _ := idem.New(db, table)
	fp, _ := idem.Fingerprint("POST", "/orders", []byte(`{"sku":"tea"}`), true)
	req := idem.Request{Scope: "user-42", Key: "order-once", Fingerprint: fp}

	// Work with no effect outside DynamoDB: computed, then committed with
	// the record in one transaction. A replay is answered by the one call
	// that loses.
	create := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(orders),
			Item: map[string]types.AttributeValue{
				"scope":    &types.AttributeValueMemberS{Value: "user-42"},
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
