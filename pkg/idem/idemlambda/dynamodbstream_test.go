package idemlambda_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// ledger is where a stream consumer under test applies a record: its
// version appended to its key's list, so that the list says both how often
// and in which order a key's records took effect.
type ledger struct {
	t     *testing.T
	s     *idemtest.Store
	table string
}

func accountTable(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("account"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("account"), KeyType: types.KeyTypeHash}}}
}

func newLedger(t *testing.T) *ledger {
	t.Helper()
	s := idemtest.NewStore(t)
	return &ledger{t: t, s: s, table: idemtest.CreateTable(t, s.Client, accountTable("ledger"))}
}

// add is the write that appends version to account's list.
func (l *ledger) add(account, version string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(l.table),
		Key:              map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: account}},
		UpdateExpression: aws.String("SET versions = list_append(if_not_exists(versions, :none), :v)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":none": &types.AttributeValueMemberL{},
			":v": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: version}}}},
	}}
}

// failing is a record ("a@2") the test makes fail this many more times.
type failing struct {
	mu sync.Mutex
	n  map[string]int
}

func (f *failing) now(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n[name]--
	return f.n[name] >= 0
}

// changes is a DynamoDB Streams consumer under test: a source table whose
// stream it reads, and a ledger where it applies each change.
type changes struct {
	*ledger
	source string
	fail   failing
}

func newChanges(t *testing.T) *changes {
	t.Helper()
	l := newLedger(t)
	src := accountTable("accounts")
	src.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	return &changes{ledger: l, source: idemtest.CreateTable(t, l.s.Client, src), fail: failing{n: map[string]int{}}}
}

// write puts versions of accounts into the source table, in order ("a@1",
// "b@1", "a@2"), and returns the n changes the stream holds then, as
// Lambda would deliver them.
func (c *changes) write(writes ...string) []events.DynamoDBEventRecord {
	c.t.Helper()
	for _, w := range writes {
		account, version, _ := strings.Cut(w, "@")
		if _, err := c.s.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(c.source), Item: map[string]types.AttributeValue{
			"account": &types.AttributeValueMemberS{Value: account}, "version": &types.AttributeValueMemberN{Value: version},
		}}); err != nil {
			c.t.Fatal(err)
		}
	}
	return idemtest.StreamEvent(c.t, c.s.Client, c.source, len(writes)).Records
}

func name(r *events.DynamoDBEventRecord) string {
	return r.Change.Keys["account"].String() + "@" + r.Change.NewImage["version"].Number()
}

// apply is the consumer's work: the change's version appended to its
// account's list in the ledger, unless the test made it fail.
func (c *changes) apply(ctx context.Context, ev idemlambda.Event[events.DynamoDBEventRecord], tx *idem.Tx) error {
	if c.fail.now(name(ev.Event)) {
		return errors.New("the ledger refused " + name(ev.Event))
	}
	tx.Add(c.add(ev.Event.Change.Keys["account"].String(), ev.Event.Change.NewImage["version"].Number()), nil)
	return nil
}

func (c *changes) door(s idemlambda.Doer, optFns ...func(*idemlambda.ConsumerOptions[events.DynamoDBEventRecord])) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return idemlambda.DynamoDBStream(s, c.apply, append([]func(*idemlambda.ConsumerOptions[events.DynamoDBEventRecord]){
		func(o *idemlambda.ConsumerOptions[events.DynamoDBEventRecord]) { o.Scope = "ledger" },
	}, optFns...)...)
}

// paths runs test under Do and under Atomic (DoAtomic), which hold the
// same order.
func paths(t *testing.T, test func(t *testing.T, atomic func(*idemlambda.ConsumerOptions[events.DynamoDBEventRecord]))) {
	for _, atomic := range []bool{false, true} {
		t.Run(map[bool]string{false: "Do", true: "Atomic"}[atomic], func(t *testing.T) {
			test(t, func(o *idemlambda.ConsumerOptions[events.DynamoDBEventRecord]) { o.Atomic = atomic })
		})
	}
}

// of is the versions of account that took effect, in their order.
func (l *ledger) of(account string) string {
	l.t.Helper()
	out, err := l.s.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(l.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: account}}})
	if err != nil {
		l.t.Fatal(err)
	}
	list, _ := out.Item["versions"].(*types.AttributeValueMemberL)
	var vs []string
	if list != nil {
		for _, v := range list.Value {
			vs = append(vs, v.(*types.AttributeValueMemberN).Value)
		}
	}
	return "[" + strings.Join(vs, " ") + "]"
}

// want fails the test unless each account's ledger is as given.
func (l *ledger) want(ledgers map[string]string) {
	l.t.Helper()
	for account, want := range ledgers {
		if got := l.of(account); got != want {
			l.t.Errorf("%s's ledger %s, want %s", account, got, want)
		}
	}
}

// from is what Lambda redelivers after an answer: the records from the
// checkpoint (the failure it names) on; none if it names none.
func from(t *testing.T, recs []events.DynamoDBEventRecord, resp events.DynamoDBEventResponse) []events.DynamoDBEventRecord {
	t.Helper()
	if len(resp.BatchItemFailures) == 0 {
		return nil
	}
	i := slices.IndexFunc(recs, func(r events.DynamoDBEventRecord) bool {
		return r.Change.SequenceNumber == resp.BatchItemFailures[0].ItemIdentifier
	})
	if i < 0 {
		t.Fatalf("the answer names %v, no record of the batch", resp.BatchItemFailures)
	}
	return recs[i:]
}

func named(t *testing.T, recs []events.DynamoDBEventRecord, resp events.DynamoDBEventResponse) string {
	t.Helper()
	if len(resp.BatchItemFailures) > 1 {
		t.Fatalf("the answer names %d records, want the first failed only", len(resp.BatchItemFailures))
	}
	if rest := from(t, recs, resp); len(rest) > 0 {
		return name(&rest[0])
	}
	return ""
}

// A stream's changes, read from the engine's stream, delivered whole,
// again, and in overlapping batches (a retry of a batch that had been
// applied): each change takes effect once, in its item's order.
func TestStreamChangesTakeEffectOnceInOrder(t *testing.T) {
	paths(t, func(t *testing.T, atomic func(*idemlambda.ConsumerOptions[events.DynamoDBEventRecord])) {
		c := newChanges(t)
		recs := c.write("a@1", "b@1", "a@2", "b@2", "a@3")
		handle := c.door(c.s.Store, atomic)
		for _, batch := range [][]events.DynamoDBEventRecord{recs, recs, recs[1:4], recs[2:]} {
			resp, err := handle(context.Background(), events.DynamoDBEvent{Records: batch})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("%v, %v: want no failure", resp, err)
			}
		}
		c.want(map[string]string{"a": "[1 2 3]", "b": "[1 2]"})
	})
}

// A change that fails in the middle of a batch holds back the later
// changes to its item, and only those: the answer names it, the first
// failure, and the redelivery from that checkpoint applies the rest of its
// item in order while the other item's changes are skipped as done.
func TestAFailedChangeHoldsBackItsItemOnly(t *testing.T) {
	paths(t, func(t *testing.T, atomic func(*idemlambda.ConsumerOptions[events.DynamoDBEventRecord])) {
		c := newChanges(t)
		recs := c.write("a@1", "a@2", "b@1", "a@3", "b@2")
		c.fail.n["a@2"] = 1
		handle := c.door(c.s.Store, atomic)
		resp, _ := handle(context.Background(), events.DynamoDBEvent{Records: recs})
		if got := named(t, recs, resp); got != "a@2" {
			t.Fatalf("the answer names %q, want a@2, the first failure", got)
		}
		c.want(map[string]string{"a": "[1]", "b": "[1 2]"})
		again := from(t, recs, resp)
		if resp, _ = handle(context.Background(), events.DynamoDBEvent{Records: again}); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("the redelivery from the checkpoint: %v, want no failure", resp)
		}
		c.want(map[string]string{"a": "[1 2 3]", "b": "[1 2]"})
	})
}

// With two items failing, the answer names the earlier failure, where
// Lambda must resume: a later one named instead would let Lambda skip the
// earlier.
func TestTheAnswerNamesTheFirstFailure(t *testing.T) {
	c := newChanges(t)
	recs := c.write("a@1", "b@1", "a@2", "b@2")
	c.fail.n["b@1"], c.fail.n["a@2"] = 1, 1
	handle := c.door(c.s.Store)
	resp, _ := handle(context.Background(), events.DynamoDBEvent{Records: recs})
	if got := named(t, recs, resp); got != "b@1" {
		t.Fatalf("the answer names %q, want b@1", got)
	}
	c.want(map[string]string{"a": "[1]", "b": "[]"})
	resp, _ = handle(context.Background(), events.DynamoDBEvent{Records: from(t, recs, resp)})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the redelivery: %v, want no failure", resp)
	}
	c.want(map[string]string{"a": "[1 2]", "b": "[1 2]"})
}

// The negative control of the two tests above: a consumer that processes
// past a failed change of the same item (each change on its own, as an
// SQS standard queue would) applies the item's later change before the
// failed one, which its redelivery then applies out of order. The door
// above holds that order; this shows the ledger tells the difference.
func TestProcessingPastAFailedChangeReordersItsItem(t *testing.T) {
	c := newChanges(t)
	recs := c.write("a@1", "a@2", "a@3")
	c.fail.n["a@2"] = 1
	handle := c.door(c.s.Store)
	var first events.DynamoDBEventResponse
	for _, r := range recs {
		resp, _ := handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r}})
		if len(first.BatchItemFailures) == 0 {
			first = resp
		}
	}
	_, _ = handle(context.Background(), events.DynamoDBEvent{Records: from(t, recs, first)})
	c.want(map[string]string{"a": "[1 3 2]"})
}

// A Lambda killed with a change's commit in flight: the change's lease
// stays live, so the batch's redelivery finds it in progress, which fails
// it (never acknowledged, as its holder may still commit) and holds back
// its item's later changes; once the lease ran out, the next redelivery
// applies each change once, in order.
func TestACrashWithACommitInFlightKeepsTheItemsOrder(t *testing.T) {
	c := newChanges(t)
	recs := c.write("a@1", "b@1", "a@2", "a@3")
	c.s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Nth: 3, Kind: idemtest.CrashBefore}) // a@2's commit
	if !idemtest.Invoke(context.Background(), func(ctx context.Context) { _, _ = c.door(c.s.Store)(ctx, events.DynamoDBEvent{Records: recs}) }) {
		t.Fatal("the invocation did not crash")
	}
	c.want(map[string]string{"a": "[1]", "b": "[1]"})
	handle := c.door(c.s.Another()) // the next Lambda, handed the whole batch again
	resp, _ := handle(context.Background(), events.DynamoDBEvent{Records: recs})
	if got := named(t, recs, resp); got != "a@2" {
		t.Fatalf("while a@2's lease is live, the answer names %q, want a@2", got)
	}
	c.want(map[string]string{"a": "[1]", "b": "[1]"})
	c.s.Clock.Advance(time.Minute) // the dead Lambda's lease runs out
	if resp, _ = handle(context.Background(), events.DynamoDBEvent{Records: from(t, recs, resp)}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("after the lease: %v, want no failure", resp)
	}
	c.want(map[string]string{"a": "[1 2 3]", "b": "[1]"})
	if n := c.s.Faults.Commits(); n != 4 {
		t.Fatalf("%d commits, want 4, one a change", n)
	}
}

// A commit that lands and loses its answer: whatever the door answers for
// that change, the redelivery from the checkpoint applies every change
// once, in order, and the lost one is not applied again.
func TestALostCommitAnswerTakesEffectOnce(t *testing.T) {
	c := newChanges(t)
	recs := c.write("a@1", "a@2", "b@1", "a@3")
	c.s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Nth: 2, Kind: idemtest.LostAnswer}) // a@2's commit
	handle := c.door(c.s.Store)
	batch := recs
	for round := 0; len(batch) > 0; round++ {
		if round == 3 {
			t.Fatalf("still failing after 3 deliveries: %s", name(&batch[0]))
		}
		resp, _ := handle(context.Background(), events.DynamoDBEvent{Records: batch})
		batch = from(t, batch, resp)
	}
	c.want(map[string]string{"a": "[1 2 3]", "b": "[1]"})
	if n := c.s.Faults.Commits(); n != 4 {
		t.Fatalf("%d commits, want 4", n)
	}
}

// A change whose id was applied with another change (a Key option that
// reads an id a producer reused) is refused on every delivery, and holds
// back its item: the changes after it are not applied past it.
func TestAChangeRefusedHoldsBackItsItem(t *testing.T) {
	c := newChanges(t)
	recs := c.write("a@1", "a@2", "b@1")
	handle := idemlambda.DynamoDBStream(c.s.Store, c.apply, func(o *idemlambda.ConsumerOptions[events.DynamoDBEventRecord]) {
		o.Scope = "ledger"
		o.Key = func(r *events.DynamoDBEventRecord) (string, error) { return r.Change.Keys["account"].String(), nil } // one id per item: wrong
	})
	for range 2 {
		resp, _ := handle(context.Background(), events.DynamoDBEvent{Records: recs})
		if got := named(t, recs, resp); got != "a@2" {
			t.Fatalf("the answer names %q, want a@2", got)
		}
	}
	c.want(map[string]string{"a": "[1]", "b": "[1]"})
}
