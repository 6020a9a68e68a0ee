package idemlambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// posting is a Kinesis record's data in these tests: the producer's event
// id, and a version of an account (the partition key).
type posting struct {
	Event   string `json:"event"`
	Account string `json:"account"`
	Version string `json:"version"`
}

// postings is a Kinesis consumer under test, applying each record to a
// ledger.
type postings struct {
	*ledger
	fail failing
}

func newPostings(t *testing.T) *postings {
	return &postings{ledger: newLedger(t), fail: failing{n: map[string]int{}}}
}

func (p *postings) apply(ctx context.Context, ev idemlambda.Event[events.KinesisEventRecord], tx *idem.Tx) error {
	var d posting
	if err := json.Unmarshal(ev.Event.Kinesis.Data, &d); err != nil {
		return err
	}
	if p.fail.now(d.Account + "@" + d.Version) {
		return errors.New("the ledger refused " + d.Account + "@" + d.Version)
	}
	tx.Add(p.add(d.Account, d.Version), nil)
	return nil
}

// eventID reads the producer's id from the record's data: what
// ConsumerOptions.Key should read on a Kinesis stream.
func eventID(r *events.KinesisEventRecord) (string, error) {
	var d posting
	if err := json.Unmarshal(r.Kinesis.Data, &d); err != nil || d.Event == "" {
		return "", fmt.Errorf("%w: the record has no event id", idem.ErrInvalidKey)
	}
	return d.Event, nil
}

func (p *postings) door(s idemlambda.Doer, optFns ...func(*idemlambda.ConsumerOptions[events.KinesisEventRecord])) func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
	return idemlambda.Kinesis(s, p.apply, append([]func(*idemlambda.ConsumerOptions[events.KinesisEventRecord]){
		func(o *idemlambda.ConsumerOptions[events.KinesisEventRecord]) { o.Scope, o.Key = "ledger", eventID },
	}, optFns...)...)
}

// kinesisRecords builds a shard's records as Lambda delivers them: "a@2"
// is version 2 of account a, under partition key a, with event id e-a@2;
// sequence numbers from seq on.
func kinesisRecords(seq int, names ...string) []events.KinesisEventRecord {
	var recs []events.KinesisEventRecord
	for i, n := range names {
		account, version, _ := strings.Cut(n, "@")
		data, _ := json.Marshal(posting{Event: "e-" + n, Account: account, Version: version})
		sn := fmt.Sprintf("4954511524349098501828006771497314458218006259324420%04d", seq+i)
		recs = append(recs, events.KinesisEventRecord{EventID: "shardId-000000000000:" + sn, EventName: "aws:kinesis:record", EventSource: "aws:kinesis",
			EventSourceArn: "arn:aws:kinesis:us-east-1:123456789012:stream/postings",
			Kinesis:        events.KinesisRecord{Data: data, PartitionKey: account, SequenceNumber: sn}})
	}
	return recs
}

// kinesisFrom is what Lambda redelivers after an answer: the records from
// the one it names on, the answer's first failure (it must name one only).
func kinesisFrom(t *testing.T, recs []events.KinesisEventRecord, resp events.KinesisEventResponse) []events.KinesisEventRecord {
	t.Helper()
	switch len(resp.BatchItemFailures) {
	case 0:
		return nil
	case 1:
	default:
		t.Fatalf("the answer names %d records, want the first failed only", len(resp.BatchItemFailures))
	}
	i := slices.IndexFunc(recs, func(r events.KinesisEventRecord) bool {
		return r.Kinesis.SequenceNumber == resp.BatchItemFailures[0].ItemIdentifier
	})
	if i < 0 {
		t.Fatalf("the answer names %v, no record of the batch", resp.BatchItemFailures)
	}
	return recs[i:]
}

// A batch delivered again, and in overlapping batches: each record takes
// effect once, in its partition key's order.
func TestKinesisRecordsTakeEffectOnceInOrder(t *testing.T) {
	p := newPostings(t)
	recs := kinesisRecords(1, "a@1", "b@1", "a@2", "b@2", "a@3")
	handle := p.door(p.s.Store)
	for _, batch := range [][]events.KinesisEventRecord{recs, recs, recs[2:], recs[1:3]} {
		if resp, err := handle(context.Background(), events.KinesisEvent{Records: batch}); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%v, %v: want no failure", resp, err)
		}
	}
	p.want(map[string]string{"a": "[1 2 3]", "b": "[1 2]"})
}

// A producer whose PutRecord lost its answer sent the record again: the
// stream holds it twice, under two sequence numbers. Keyed by the
// producer's event id, it takes effect once; keyed by the default, the
// record's own eventID, twice: why Kinesis's go doc says to pass Key.
func TestAProducersRetryIsOneRecordUnderItsEventID(t *testing.T) {
	p := newPostings(t)
	recs := kinesisRecords(1, "a@1", "a@1")
	if recs[0].Kinesis.SequenceNumber == recs[1].Kinesis.SequenceNumber {
		t.Fatal("the copies share a sequence number")
	}
	resp, _ := p.door(p.s.Store)(context.Background(), events.KinesisEvent{Records: recs})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v, want none", resp.BatchItemFailures)
	}
	byRecord := p.door(p.s.Store, func(o *idemlambda.ConsumerOptions[events.KinesisEventRecord]) { o.Scope, o.Key = "by-record", nil })
	_, _ = byRecord(context.Background(), events.KinesisEvent{Records: recs})
	p.want(map[string]string{"a": "[1 1 1]"}) // once under the event id, twice under the sequence numbers
}

// A record that fails in the middle of a batch holds back its partition
// key's later records, and only those; the answer names it, and the
// redelivery from that checkpoint applies the rest in order.
func TestAFailedKinesisRecordHoldsBackItsPartitionKeyOnly(t *testing.T) {
	p := newPostings(t)
	recs := kinesisRecords(1, "a@1", "b@1", "a@2", "b@2", "a@3", "c@1")
	p.fail.n["b@1"], p.fail.n["a@2"] = 1, 1
	handle := p.door(p.s.Store)
	resp, _ := handle(context.Background(), events.KinesisEvent{Records: recs})
	again := kinesisFrom(t, recs, resp)
	if len(again) != 5 {
		t.Fatalf("the answer %v, want b@1's sequence number, the first failure", resp.BatchItemFailures)
	}
	p.want(map[string]string{"a": "[1]", "b": "[]", "c": "[1]"})
	if resp, _ = handle(context.Background(), events.KinesisEvent{Records: again}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the redelivery: %v, want no failure", resp)
	}
	p.want(map[string]string{"a": "[1 2 3]", "b": "[1 2]", "c": "[1]"})
}

// A record whose id another delivery holds (a Lambda that died with its
// commit in flight, its lease still live) is not acknowledged: the answer
// names it, and its key's later records wait; after the lease, each takes
// effect once, in order.
func TestAKinesisRecordInProgressElsewhereIsNotAcknowledged(t *testing.T) {
	p := newPostings(t)
	recs := kinesisRecords(1, "a@1", "a@2", "b@1")
	p.s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.CrashBefore})
	if !idemtest.Invoke(context.Background(), func(ctx context.Context) {
		_, _ = p.door(p.s.Store)(ctx, events.KinesisEvent{Records: recs[:1]})
	}) {
		t.Fatal("the invocation did not crash")
	}
	handle := p.door(p.s.Another())
	resp, _ := handle(context.Background(), events.KinesisEvent{Records: recs})
	if again := kinesisFrom(t, recs, resp); len(again) != 3 {
		t.Fatalf("the answer %v, want a@1 named, in progress elsewhere", resp.BatchItemFailures)
	}
	p.want(map[string]string{"a": "[]", "b": "[1]"})
	p.s.Clock.Advance(time.Minute) // the dead Lambda's lease runs out
	if resp, _ = handle(context.Background(), events.KinesisEvent{Records: recs}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("after the lease: %v, want no failure", resp)
	}
	p.want(map[string]string{"a": "[1 2]", "b": "[1]"})
}

// A record that fails is logged with its eventID, for the operator who
// finds it in the mapping's on-failure destination; the records it holds
// back are not (they did not fail, they wait).
func TestAFailedRecordIsLoggedWithItsID(t *testing.T) {
	p := newPostings(t)
	var buf bytes.Buffer
	recs := kinesisRecords(1, "a@1", "a@2")
	p.fail.n["a@1"] = 1
	_, _ = p.door(p.s.Store, func(o *idemlambda.ConsumerOptions[events.KinesisEventRecord]) {
		o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	})(context.Background(), events.KinesisEvent{Records: recs})
	if n := strings.Count(buf.String(), "\n"); n != 1 || !strings.Contains(buf.String(), `"record_id":"`+recs[0].EventID+`"`) || !strings.Contains(buf.String(), "refused a@1") {
		t.Fatalf("log %s: want one line, for a@1, with its eventID", buf.String())
	}
}

// A record whose event id was applied with other data (a producer that
// reused an id) is refused, and a record whose handler panics fails: each
// holds back its own partition key's later records, on every delivery.
func TestARefusedOrPanickingRecordHoldsBackItsPartitionKey(t *testing.T) {
	p := newPostings(t)
	recs := kinesisRecords(1, "a@1", "a@2", "b@1", "b@2", "c@1")
	recs[1].Kinesis.Data = []byte(strings.Replace(string(recs[1].Kinesis.Data), "e-a@2", "e-a@1", 1)) // a@2 under a@1's id
	handle := idemlambda.Kinesis(p.s.Store, func(ctx context.Context, ev idemlambda.Event[events.KinesisEventRecord], tx *idem.Tx) error {
		if ev.Key == "e-b@1" {
			panic("b@1")
		}
		return p.apply(ctx, ev, tx)
	}, func(o *idemlambda.ConsumerOptions[events.KinesisEventRecord]) { o.Scope, o.Key = "ledger", eventID })
	for range 2 {
		resp, _ := handle(context.Background(), events.KinesisEvent{Records: recs})
		if again := kinesisFrom(t, recs, resp); len(again) != 4 {
			t.Fatalf("the answer %v, want a@2's sequence number, refused", resp.BatchItemFailures)
		}
	}
	p.want(map[string]string{"a": "[1]", "b": "[]", "c": "[1]"})
}

// A failed record without a sequence number (never from Lambda) is not
// taken for success: the answer names it, with an empty identifier, which
// Lambda takes as the whole batch failed.
func TestAFailedRecordWithoutASequenceNumberFailsTheBatch(t *testing.T) {
	p := newPostings(t)
	recs := kinesisRecords(1, "a@1", "b@1")
	recs[0].Kinesis.SequenceNumber = ""
	p.fail.n["a@1"] = 1
	resp, _ := p.door(p.s.Store)(context.Background(), events.KinesisEvent{Records: recs})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "" {
		t.Fatalf("the answer %v, want one failure with an empty identifier", resp.BatchItemFailures)
	}
}

// A stream door without a scope is a mistake in its options, found when
// it is built: a panic with ErrInvalidOptions, as every consumer's.
func TestStreamDoorsNeedAScope(t *testing.T) {
	s := idemtest.NewStore(t)
	builds := map[string]func(){
		"Kinesis": func() {
			idemlambda.Kinesis(s, func(context.Context, idemlambda.Event[events.KinesisEventRecord], *idem.Tx) error { return nil })
		},
		"DynamoDBStream": func() {
			idemlambda.DynamoDBStream(s, func(context.Context, idemlambda.Event[events.DynamoDBEventRecord], *idem.Tx) error { return nil })
		},
	}
	for name, build := range builds {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if err, _ := recover().(error); !errors.Is(err, idem.ErrInvalidOptions) {
					t.Fatalf("built: %v, want a panic with ErrInvalidOptions", err)
				}
			}()
			build()
		})
	}
}
