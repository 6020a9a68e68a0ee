// Package testbed is the fixture of pkg/idem's own tests and of its doors'
// tests, on the public kit (pkg/idemtest): a Store on DynamoDB Local with a
// settable clock, its calls counted, beside a business table of orders.
package testbed

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// Race runs fn(0) to fn(n-1) in n goroutines released at once, and waits.
func Race(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// Clock is the kit's settable time source, shared by the holders in a
// test. It starts at the real time, as the engine's TTL runs on the real
// clock: a record written from a fixed date in the past would be expired
// to DynamoDB Local, which deletes it in the background mid-test.
type Clock = idemtest.Clock

// NewClock is a Clock at the real time.
var NewClock = idemtest.NewClock

// Fixture is one test's tables, client and store.
type Fixture struct {
	T        *testing.T
	Raw      *dynamodb.Client
	DB       *Counter // counts the Store's calls
	Clock    *Clock
	Table    string // the idempotency table
	Business string // a table of orders for business writes: hash key scope, range key order_id
	Store    *idem.Store
}

func New(t *testing.T, optFns ...func(*idem.Options)) *Fixture {
	t.Helper()
	raw := idemtest.Client(t)
	f := &Fixture{T: t, Raw: raw, DB: &Counter{API: raw}, Clock: NewClock()}
	f.Table = idemtest.Table(t, raw)
	f.Business = OrdersTable(t, raw)
	f.Store = f.NewStore(optFns...)
	return f
}

// OrdersTable creates a table of orders, items keyed by scope (hash) and
// order_id (range), as the business writes of these tests expect.
func OrdersTable(t testing.TB, db *dynamodb.Client) string {
	t.Helper()
	return idemtest.CreateTable(t, db, &dynamodb.CreateTableInput{
		TableName: aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("scope"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("order_id"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("scope"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("order_id"), KeyType: types.KeyTypeRange},
		},
	})
}

// NewStore is another holder on the same table and clock: another Lambda.
func (f *Fixture) NewStore(optFns ...func(*idem.Options)) *idem.Store {
	f.T.Helper()
	fns := append([]func(*idem.Options){func(o *idem.Options) { o.Clock = f.Clock.Now }}, optFns...)
	s, err := idem.New(f.DB, f.Table, fns...)
	if err != nil {
		f.T.Fatal(err)
	}
	return s
}

// OrderPut is a business write: an order item that must not exist yet.
func (f *Fixture) OrderPut(scope, id, note string) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(f.Business),
		Item: map[string]types.AttributeValue{
			"scope":    &types.AttributeValueMemberS{Value: scope},
			"order_id": &types.AttributeValueMemberS{Value: id},
			"note":     &types.AttributeValueMemberS{Value: note},
		},
		ConditionExpression: aws.String("attribute_not_exists(order_id)"),
	}}
}

// Order reads a business item back; nil if it is not there.
func (f *Fixture) Order(scope, id string) map[string]types.AttributeValue {
	f.T.Helper()
	return f.get(f.Business, map[string]types.AttributeValue{"scope": &types.AttributeValueMemberS{Value: scope}, "order_id": &types.AttributeValueMemberS{Value: id}})
}

// Record reads the idempotency record of (scope, key) back.
func (f *Fixture) Record(scope, key string) map[string]types.AttributeValue {
	f.T.Helper()
	return f.get(f.Table, map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: strconv.Itoa(len(scope)) + ":" + scope + ":" + key}})
}

// get reads an item with a consistent read; nil if it is not there.
func (f *Fixture) get(table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	f.T.Helper()
	out, err := f.Raw.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		f.T.Fatal(err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// Lapsed fails the test unless (scope, key)'s record is a lapsed lease that
// still names its request: in progress, lease_until 0, fingerprint fp.
func (f *Fixture) Lapsed(scope, key, fp string) {
	f.T.Helper()
	item := f.Record(scope, key)
	if Str(item, "status") != "IN_PROGRESS" || Num(item, "lease_until") != "0" || Str(item, "fingerprint") != fp {
		f.T.Fatalf("record = %v, want a lapsed lease bound to its request", item)
	}
}

func Num(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

func Str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func Req(scope, key, body string) idem.Request {
	fp, err := idem.Fingerprint("POST", "/orders", []byte(body), true)
	if err != nil {
		panic(err)
	}
	return idem.Request{Scope: scope, Key: key, Fingerprint: fp}
}

// APIRequest is an HTTP API (payload 2.0) request to POST /orders from a
// caller whose JWT API Gateway verified (its sub and a tenant claim "t-" +
// sub; no caller for sub "").
func APIRequest(sub string, headers map[string]string, body string) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{RouteKey: "POST /orders", RawPath: "/orders", Headers: headers, Body: body}
	req.RequestContext.HTTP.Method = "POST"
	if sub != "" {
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": sub, "tenant": "t-" + sub}},
		}
	}
	return req
}
