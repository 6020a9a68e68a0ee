package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// calls records the DynamoDB calls the function's code makes in these
// tests, which its role must grant exactly (apitest.Main).
var calls = &dynamotest.Actions{}

func TestMain(m *testing.M) { os.Exit(apitest.Main(m, "OrderStatsFunction", calls)) }

// streamChange names a change to OrdersTable: the stream's event ID, the
// event's name (INSERT, MODIFY), and the order's scope and ID.
type streamChange struct {
	eventID, name, scope, order string
}

// change is a stream record of OrdersTable, as the pipe delivers it: c,
// with an item of tea for each of quantities.
func change(t *testing.T, c streamChange, quantities ...int) string {
	t.Helper()
	eventID, name, scope, order := c.eventID, c.name, c.scope, c.order
	var items []events.DynamoDBAttributeValue
	for _, q := range quantities {
		items = append(items, events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"sku": events.NewStringAttribute("tea"), "quantity": events.NewNumberAttribute(strconv.Itoa(q)),
		}))
	}
	b, err := json.Marshal(events.DynamoDBEventRecord{EventID: eventID, EventName: name, Change: events.DynamoDBStreamRecord{
		NewImage: map[string]events.DynamoDBAttributeValue{
			"scope": events.NewStringAttribute(scope), "order_id": events.NewStringAttribute(order), "items": events.NewListAttribute(items),
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEachOrderCountsOnceHoweverDelivered(t *testing.T) {
	c := newConsumer(t)
	raw, stats, handle := c.raw, c.stats, c.handle
	first := change(t, streamChange{"e1", "INSERT", "alice", "o1"}, 2, 3)
	batch := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: first},
		{MessageId: "m2", Body: first}, // the pipe sent the same change again
		{MessageId: "m3", Body: change(t, streamChange{"e2", "INSERT", "alice", "o2"}, 1)},
		{MessageId: "m4", Body: change(t, streamChange{"e3", "MODIFY", "alice", "o2"}, 9)},
		{MessageId: "m5", Body: "not a stream record"},
	}}
	for delivery := range 2 { // and SQS redelivers the whole batch
		resp, err := handle(context.Background(), batch)
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m5" {
			t.Fatalf("delivery %d: %+v, %v; want only m5 failed", delivery, resp, err)
		}
	}
	out, err := raw.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(stats), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: "alice"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := func(name string) string {
		if v, ok := out.Item[name].(*types.AttributeValueMemberN); ok {
			return v.Value
		}
		return ""
	}
	if got("order_count") != "2" || got("item_count") != "6" {
		t.Fatalf("stats = %v: want 2 orders and 6 items", out.Item)
	}
}

func TestTemplateTableMatchesTheCode(t *testing.T) {
	apitest.CheckKeys(t, "OrderStatsTable", attrScope)
}

// consumerFixture is the consumer as main builds it, on its own tables.
type consumerFixture struct {
	raw    *dynamodb.Client
	stats  string
	idem   string
	logs   *strings.Builder
	now    time.Time
	store  *dynamotest.Counter // the idempotency store's calls
	handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

func newConsumer(t *testing.T) *consumerFixture {
	t.Helper()
	f := &consumerFixture{raw: dynamotest.Client(t), logs: &strings.Builder{}, now: time.Now()}
	f.stats = dynamotest.Table(t, f.raw, "OrderStatsTable")
	f.idem = dynamotest.Table(t, f.raw, "IdempotencyTable")
	clock := func() time.Time { return f.now }
	fn := dynamotest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = calls }) // the function's: its calls are recorded
	f.store = &dynamotest.Counter{API: fn}
	store, err := idem.New(f.store, f.idem, func(o *idem.Options) { o.TTL, o.Clock = MarkerTTL, clock })
	if err != nil {
		t.Fatal(err)
	}
	p := &projector{db: fn, table: f.stats, now: clock, log: slog.New(slog.NewJSONHandler(f.logs, nil))}
	f.handle = idemlambda.SQS(store, p.project, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope, o.Key = consumer, eventID })
	return f
}

func (f *consumerFixture) count(t *testing.T, scope string) string {
	t.Helper()
	out, err := f.raw.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.stats), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: scope}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := out.Item["order_count"].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return "0"
}

// malformed is a stream record whose first line item is items[0] as given.
func malformed(t *testing.T, eventID string, item events.DynamoDBAttributeValue) string {
	t.Helper()
	b, err := json.Marshal(events.DynamoDBEventRecord{EventID: eventID, EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		NewImage: map[string]events.DynamoDBAttributeValue{
			"scope": events.NewStringAttribute("alice"), "order_id": events.NewStringAttribute("o-" + eventID),
			"items": events.NewListAttribute([]events.DynamoDBAttributeValue{item}),
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A record whose line item has no numeric quantity fails alone: the rest
// of the batch is counted, and only it is reported back.
func TestMalformedRecordFailsAlone(t *testing.T) {
	f := newConsumer(t)
	batch := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: change(t, streamChange{"e1", "INSERT", "alice", "o1"}, 2)},
		{MessageId: "m2", Body: malformed(t, "e2", events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"sku": events.NewStringAttribute("tea")}))},
		{MessageId: "m3", Body: malformed(t, "e3", events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"quantity": events.NewStringAttribute("2")}))},
		{MessageId: "m4", Body: malformed(t, "e4", events.NewStringAttribute("tea"))},
		{MessageId: "m5", Body: change(t, streamChange{"e5", "INSERT", "alice", "o5"}, 1)},
	}}
	resp, err := f.handle(context.Background(), batch)
	var failed []string
	for _, x := range resp.BatchItemFailures {
		failed = append(failed, x.ItemIdentifier)
	}
	if err != nil || strings.Join(failed, ",") != "m2,m3,m4" {
		t.Fatalf("failures %v, %v: want m2, m3 and m4 alone", failed, err)
	}
	if n := f.count(t, "alice"); n != "2" {
		t.Fatalf("order_count %s, want the two good records", n)
	}
}

// A redrive can bring a change back up to 18 days after it happened (14 in
// the dead-letter queue from its first enqueue, then a new retention as a
// new message), longer than any processed marker lives. A change within
// MaxAge counts once however often it comes, its marker outliving MaxAge;
// an older one is refused and said so, not counted a second time.
func TestOldRedriveIsRefusedAndSaidSo(t *testing.T) {
	f := newConsumer(t)
	aged := func(id string, age time.Duration) events.SQSMessage {
		var r events.DynamoDBEventRecord
		if err := json.Unmarshal([]byte(change(t, streamChange{id, "INSERT", "alice", "o-" + id}, 1)), &r); err != nil {
			t.Fatal(err)
		}
		r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: f.now.Add(-age)}
		b, _ := json.Marshal(r)
		return events.SQSMessage{MessageId: "m-" + id, Body: string(b)}
	}
	recent := aged("recent", time.Hour)
	if resp, err := f.handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{recent}}); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("recent change: %+v %v", resp, err)
	}
	f.now = f.now.Add(MaxAge - 2*time.Hour) // redriven just inside the window
	recent.MessageId = "m-redriven"
	if resp, err := f.handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{recent}}); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redriven change: %+v %v", resp, err)
	}
	if n := f.count(t, "alice"); n != "1" {
		t.Fatalf("order_count %s after a redrive inside the window, want 1", n)
	}
	old := aged("old", MaxAge+time.Hour)
	if resp, err := f.handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{old}}); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("old change: %+v %v, want it acknowledged", resp, err)
	}
	if n := f.count(t, "alice"); n != "1" || !strings.Contains(f.logs.String(), "change refused, older than the exactly-once window") {
		t.Fatalf("order_count %s, logs %s: want the old change refused and said so", n, f.logs.String())
	}
}

// An order's change, created at the unix time given, as the order function
// writes it.
func changeAt(t *testing.T, eventID, scope, order string, created int64) string {
	t.Helper()
	var r events.DynamoDBEventRecord
	if err := json.Unmarshal([]byte(change(t, streamChange{eventID, "INSERT", scope, order}, 1)), &r); err != nil {
		t.Fatal(err)
	}
	r.Change.NewImage["created"] = events.NewNumberAttribute(strconv.FormatInt(created, 10))
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// last_order_id is the newest order by its creation time, then by id,
// whatever order the messages arrive in: an older order redelivered or
// redriven after a newer one is counted and leaves it alone.
func TestLastOrderIsTheNewestByCreationTime(t *testing.T) {
	f := newConsumer(t)
	now := f.now.Unix()
	for i, step := range []struct {
		body, want string
	}{
		{changeAt(t, "e2", "alice", "o2", now-10), "o2"},
		{changeAt(t, "e1", "alice", "o1", now-60), "o2"}, // older, redriven late
		{changeAt(t, "e3", "alice", "o3", now-10), "o3"}, // the same second: the greater id
		{changeAt(t, "e0", "alice", "o0", now-3600), "o3"},
		{changeAt(t, "e4", "alice", "o4", now), "o4"},
	} {
		resp, err := f.handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m" + strconv.Itoa(i), Body: step.body}}})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("step %d: %+v %v", i, resp, err)
		}
		out, err := f.raw.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.stats), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: "alice"}}})
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := out.Item["last_order_id"].(*types.AttributeValueMemberS); id == nil || id.Value != step.want {
			t.Fatalf("step %d: last_order_id %v, want %s", i, out.Item["last_order_id"], step.want)
		}
	}
	if n := f.count(t, "alice"); n != "5" {
		t.Fatalf("order_count %s, want 5", n)
	}
}

// The function as its cold start makes it, from the environment the
// template gives it, checks the idempotency table and counts an event once
// however often it is delivered.
func TestColdStartMakesAWorkingFunctionFromItsEnvironment(t *testing.T) {
	f := newConsumer(t)
	for k, v := range map[string]string{
		"IDEMPOTENCY_TABLE": f.idem, "ORDER_STATS_TABLE": f.stats,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
	} {
		t.Setenv(k, v)
	}
	handle, err := newHandler(context.Background(), nil, func(o *dynamodb.Options) { o.HTTPClient = calls })
	if err != nil {
		t.Fatal(err)
	}
	msg := events.SQSMessage{MessageId: "m1", Body: change(t, streamChange{"e1", "INSERT", "alice", "o1"}, 2)}
	for range 2 {
		if resp, err := handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}}); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%+v, %v", resp, err)
		}
	}
	if n := f.count(t, "alice"); n != "1" {
		t.Fatalf("order_count %s, want the event counted once", n)
	}
}

// A processed marker deleted by hand under its holder (bypassing idemctl,
// which refuses a key in progress) fences the holder's commit: finding no
// record, the commit reads the key once and counts nothing; the message is
// reported failed, and its redelivery counts the order once.
func TestAMarkerDeletedUnderItsHolderFencesItsCommit(t *testing.T) {
	f := newConsumer(t)
	f.store.Before = func(op string) error {
		if op == "TransactWriteItems" {
			pk := strconv.Itoa(len(consumer)) + ":" + consumer + ":e1"
			_, err := f.raw.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(f.idem),
				Key: map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: pk}}})
			return err
		}
		return nil
	}
	batch := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: change(t, streamChange{"e1", "INSERT", "alice", "o1"}, 2)}}}
	if resp, err := f.handle(context.Background(), batch); err != nil || len(resp.BatchItemFailures) != 1 || f.count(t, "alice") != "0" {
		t.Fatalf("%+v, %v, count %s: want m1 failed and nothing counted", resp, err, f.count(t, "alice"))
	}
	if f.store.Get("GetItem") != 1 {
		t.Fatalf("calls %v: want the one read of a commit that found no record", f.store.Calls())
	}
	f.store.Before = nil
	if resp, err := f.handle(context.Background(), batch); err != nil || len(resp.BatchItemFailures) != 0 || f.count(t, "alice") != "1" {
		t.Fatalf("redelivery: %+v, %v, count %s: want the order counted once", resp, err, f.count(t, "alice"))
	}
}
