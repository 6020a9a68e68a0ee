package idem_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/idem"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

// race runs fn(0) to fn(n-1) in n goroutines released at once, and waits.
func race(n int, fn func(i int)) {
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

// clock is a settable time source shared by the holders in a test. It
// starts at the real time, as the engine's TTL runs on the real clock: a
// record written from a fixed date in the past would be expired to DynamoDB
// Local, which deletes it in the background mid-test. A test that needs an
// expired record advances the clock, or writes the record expired.
type clock struct{ now atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.now.Store(time.Now().UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.now.Load()) }
func (c *clock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// fixture is one test's tables, client and store.
type fixture struct {
	t        *testing.T
	raw      *dynamodb.Client
	db       *dynamotest.Counter
	clock    *clock
	table    string // the idempotency table
	business string // a table shaped like OrdersTable for business writes
	store    *idem.Store
}

func newFixture(t *testing.T, optFns ...func(*idem.Options)) *fixture {
	t.Helper()
	raw := dynamotest.Client(t)
	f := &fixture{t: t, raw: raw, db: &dynamotest.Counter{API: raw}, clock: newClock()}
	f.table = dynamotest.Table(t, raw, "IdempotencyTable")
	f.business = dynamotest.Table(t, raw, "OrdersTable")
	f.store = f.newStore(optFns...)
	return f
}

// newStore is another holder on the same table and clock: another Lambda.
func (f *fixture) newStore(optFns ...func(*idem.Options)) *idem.Store {
	f.t.Helper()
	fns := append([]func(*idem.Options){func(o *idem.Options) { o.Clock = f.clock.Now }}, optFns...)
	s, err := idem.New(f.db, f.table, fns...)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// orderPut is a business write: an order item that must not exist yet.
func (f *fixture) orderPut(scope, id, note string) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(f.business),
		Item: map[string]types.AttributeValue{
			"scope":    &types.AttributeValueMemberS{Value: scope},
			"order_id": &types.AttributeValueMemberS{Value: id},
			"note":     &types.AttributeValueMemberS{Value: note},
		},
		ConditionExpression: aws.String("attribute_not_exists(order_id)"),
	}}
}

// order reads a business item back; nil if it is not there.
func (f *fixture) order(scope, id string) map[string]types.AttributeValue {
	f.t.Helper()
	out, err := f.raw.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(f.business),
		Key:            map[string]types.AttributeValue{"scope": &types.AttributeValueMemberS{Value: scope}, "order_id": &types.AttributeValueMemberS{Value: id}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// record reads the idempotency record of (scope, key) back.
func (f *fixture) record(scope, key string) map[string]types.AttributeValue {
	f.t.Helper()
	out, err := f.raw.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(f.table),
		Key:            map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: idem.RecordPK(scope, key)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// lapsed fails the test unless (scope, key)'s record is a lapsed lease that
// still names its request: in progress, lease_until 0, fingerprint fp.
func (f *fixture) lapsed(scope, key, fp string) {
	f.t.Helper()
	item := f.record(scope, key)
	if str(item, "status") != idem.StatusInProgress || num(item, "lease_until") != "0" || str(item, "fingerprint") != fp {
		f.t.Fatalf("record = %v, want a lapsed lease bound to its request", item)
	}
}

func num(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func req(scope, key, body string) idem.Request {
	fp, err := idem.Fingerprint("POST", "/orders", []byte(body), true)
	if err != nil {
		panic(err)
	}
	return idem.Request{Scope: scope, Key: key, Fingerprint: fp}
}
