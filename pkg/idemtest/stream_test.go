package idemtest_test

import (
	"context"
	"encoding/json"
	"math/big"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idemtest"
)

// StreamEvent reads a table's stream as Lambda delivers it: each write a
// record with its own id, in order, the keys, the old and the new image
// with every type of value, and the event survives Lambda's JSON.
func TestStreamEventReadsTheStreamAsLambdaDeliversIt(t *testing.T) {
	db := idemtest.Client(t)
	ctx := context.Background()
	table := idemtest.CreateTable(t, db, &dynamodb.CreateTableInput{TableName: aws.String("accounts"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("account"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("account"), KeyType: types.KeyTypeHash}},
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}})
	key := map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "a"}}
	item := map[string]types.AttributeValue{"account": key["account"],
		"n": &types.AttributeValueMemberN{Value: "42"}, "b": &types.AttributeValueMemberB{Value: []byte{1, 2}},
		"ok": &types.AttributeValueMemberBOOL{Value: true}, "none": &types.AttributeValueMemberNULL{Value: true},
		"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "x"}}},
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: "1"}}},
		"ss": &types.AttributeValueMemberSS{Value: []string{"s"}}, "ns": &types.AttributeValueMemberNS{Value: []string{"7"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{3}}},
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}))
	must(db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key, UpdateExpression: aws.String("SET n = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "43"}}}))
	must(db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}))

	ev := idemtest.StreamEvent(t, db, table, 3)
	if len(ev.Records) != 3 {
		t.Fatalf("%d records, want 3", len(ev.Records))
	}
	ins, mod, rem := ev.Records[0], ev.Records[1], ev.Records[2]
	for i, want := range []string{"INSERT", "MODIFY", "REMOVE"} {
		r := ev.Records[i]
		if r.EventName != want || r.EventID == "" || r.EventSource != "aws:dynamodb" || r.Change.Keys["account"].String() != "a" || r.EventSourceArn == "" {
			t.Errorf("record %d: %s %q from %s, keys %v; want %s of a, with an id", i, r.EventName, r.EventID, r.EventSource, r.Change.Keys, want)
		}
		if i > 0 && (r.EventID == ev.Records[i-1].EventID || !later(r.Change.SequenceNumber, ev.Records[i-1].Change.SequenceNumber)) {
			t.Errorf("record %d: id %s, sequence %s after %s: want its own id, later in the stream", i, r.EventID, r.Change.SequenceNumber, ev.Records[i-1].Change.SequenceNumber)
		}
	}
	n := ins.Change.NewImage
	if n["n"].Number() != "42" || string(n["b"].Binary()) != "\x01\x02" || !n["ok"].Boolean() || !n["none"].IsNull() ||
		n["l"].List()[0].String() != "x" || n["m"].Map()["k"].Number() != "1" || n["ss"].StringSet()[0] != "s" ||
		n["ns"].NumberSet()[0] != "7" || n["bs"].BinarySet()[0][0] != 3 || ins.Change.OldImage != nil {
		t.Errorf("the INSERT's images: new %v, old %v; want the item as written, and no old image", n, ins.Change.OldImage)
	}
	if mod.Change.OldImage["n"].Number() != "42" || mod.Change.NewImage["n"].Number() != "43" || rem.Change.NewImage != nil || rem.Change.OldImage["n"].Number() != "43" {
		t.Errorf("MODIFY %v to %v, REMOVE of %v to %v: want 42 to 43, then 43 to none", mod.Change.OldImage["n"], mod.Change.NewImage["n"], rem.Change.OldImage["n"], rem.Change.NewImage)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var back events.DynamoDBEvent
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Records[1].Change.NewImage, mod.Change.NewImage) {
		t.Fatalf("the event through Lambda's JSON: %v, %v; want it unchanged", err, back.Records[1].Change.NewImage)
	}
}

// later reports whether sequence number a comes after b: they are
// numbers, whose strings need not have one length.
func later(a, b string) bool {
	x, okx := new(big.Int).SetString(a, 10)
	y, oky := new(big.Int).SetString(b, 10)
	return okx && oky && x.Cmp(y) > 0
}
