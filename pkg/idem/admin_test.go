package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

func TestInspectShowsTheRecord(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.Store.Inspect(ctx, "alice", "k1"); !errors.Is(err, idem.ErrNoRecord) {
		t.Fatalf("no record: %v, want ErrNoRecord", err)
	}
	start := f.Clock.Now()
	if _, err := f.Store.Do(ctx, req("alice", "k1", `{}`), ok); err != nil {
		t.Fatal(err)
	}
	rec, err := f.Store.Inspect(ctx, "alice", "k1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != "COMPLETED" || rec.Attempts != 1 || rec.Response == nil || rec.Response.StatusCode != 201 || string(rec.Response.Body) != "{}" {
		t.Fatalf("record %+v", rec)
	}
	if !rec.CreatedAt.Equal(start.Truncate(time.Millisecond)) || rec.CompletedAt.IsZero() || rec.KeyHash != idem.KeyHash("alice", "k1") {
		t.Fatalf("times or hash: %+v", rec)
	}
	if left := rec.LeaseLeft(f.Clock.Now()); left != 0 {
		t.Fatalf("a completed key has %v of lease left", left)
	}
	f.Clock.Advance(idem.MinTTL + time.Hour)
	if _, err := f.Store.Inspect(ctx, "alice", "k1"); !errors.Is(err, idem.ErrNoRecord) {
		t.Fatalf("expired record: %v, want ErrNoRecord", err)
	}
}

// TestInspectShowsALapsedKeysZeroTimes holds KeyRecord's doc: LeaseUntil
// is zero once lapsed, CompletedAt zero and Response nil while in progress
// (never the Unix epoch read from a stored 0).
func TestInspectShowsALapsedKeysZeroTimes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	failed := errors.New("provider timed out")
	if _, err := f.Store.Do(ctx, req("alice", "k1", `{}`), func(context.Context, *idem.Tx) (idem.Response, error) {
		return idem.Response{}, failed
	}); !errors.Is(err, failed) {
		t.Fatalf("err = %v, want the work's error", err)
	}
	rec, err := f.Store.Inspect(ctx, "alice", "k1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != "IN_PROGRESS" || !rec.LeaseUntil.IsZero() || !rec.CompletedAt.IsZero() || rec.Response != nil || rec.Attempts != 1 {
		t.Fatalf("a lapsed key: %+v; want IN_PROGRESS, zero LeaseUntil and CompletedAt, no Response, 1 attempt", rec)
	}
	if left := rec.LeaseLeft(f.Clock.Now()); left != 0 {
		t.Fatalf("a lapsed key has %v of lease left", left)
	}
}

// adminLog is an operator's store whose log lines the test reads.
func adminLog(f *fixture) (*idem.Store, *bytes.Buffer) {
	var buf bytes.Buffer
	return f.NewStore(func(o *idem.Options) { o.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) }), &buf
}

func TestLapseHandsADeadHoldersKeyToTheNextRetry(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := req("bob", "k1", `{}`)
	claimed, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		_, err := f.Store.Do(ctx, r, func(context.Context, *idem.Tx) (idem.Response, error) {
			close(claimed)
			<-release // "dead": it only wakes after the key has moved on
			return idem.Response{StatusCode: 201}, nil
		})
		holder <- err
	}()
	<-claimed
	ops, log := adminLog(f)
	rec, err := ops.Inspect(ctx, "bob", "k1")
	if err != nil || rec.Status != "IN_PROGRESS" || rec.LeaseLeft(f.Clock.Now()) <= 0 {
		t.Fatalf("in progress: %+v %v", rec, err)
	}
	if err := ops.Lapse(ctx, rec, ""); !errors.Is(err, idem.ErrNoReason) {
		t.Fatalf("lapse without a reason: %v", err)
	}
	if err := ops.Lapse(ctx, rec, "holder's Lambda timed out (request 42)"); err != nil {
		t.Fatal(err)
	}
	f.Lapsed("bob", "k1", r.Fingerprint)
	if _, err := f.NewStore().Do(ctx, r, ok); err != nil {
		t.Fatalf("the retry after the lapse: %v, want it to take over at once", err)
	}
	close(release)
	if err := <-holder; !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("the holder that woke: %v, want fenced", err)
	}
	if err := ops.Lapse(ctx, rec, "again"); !errors.Is(err, idem.ErrRecordChanged) || errors.Is(err, idem.ErrWrongState) {
		t.Fatalf("lapse on a token since taken over (the taker completed): %v, want ErrRecordChanged", err)
	}
	var line map[string]any
	if err := json.Unmarshal(bytes.SplitN(log.Bytes(), []byte("\n"), 2)[0], &line); err != nil {
		t.Fatal(err)
	}
	if line["action"] != "lapse" || line["reason"] != "holder's Lambda timed out (request 42)" || line["key_hash"] != idem.KeyHash("bob", "k1") {
		t.Fatalf("log line %v", line)
	}
}

// TestLapsedLiveHolderNeverCommits holds Lapse's doc: a holder that was
// alive after all is fenced once lapsed, even with no retry in between: its
// commit fails with ErrLeaseLost, its writes never land, and the key stays
// lapsed for the request's retry.
func TestLapsedLiveHolderNeverCommits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := req("bob", "k2", `{}`)
	claimed, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		_, err := f.Store.Do(ctx, r, func(_ context.Context, tx *idem.Tx) (idem.Response, error) {
			close(claimed)
			<-release
			tx.Add(f.OrderPut("bob", "o-live", "late"), nil)
			return idem.Response{StatusCode: 201}, nil
		})
		holder <- err
	}()
	<-claimed
	rec, err := f.Store.Inspect(ctx, "bob", "k2")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Store.Lapse(ctx, rec, "looked dead"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-holder; !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("the live holder's commit after the lapse: %v, want ErrLeaseLost", err)
	}
	if f.Order("bob", "o-live") != nil {
		t.Fatal("the lapsed holder's write landed")
	}
	f.Lapsed("bob", "k2", r.Fingerprint)
}

// The holder the operator took for dead completes between the operator's
// read and the lapse: the key is completed under the lease the operator
// read, which is ErrWrongState (there is nothing left to lapse), not
// ErrRecordChanged (nobody else took the key), and the response stands.
func TestLapseOfAKeyItsHolderCompletedSinceIsWrongState(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := req("bob", "k3", `{}`)
	let := hold(t, f, r)
	rec, err := f.Store.Inspect(ctx, "bob", "k3")
	if err != nil || rec.Status != "IN_PROGRESS" {
		t.Fatalf("in progress: %+v %v", rec, err)
	}
	if err := let(); err != nil {
		t.Fatal(err)
	}
	if err := f.Store.Lapse(ctx, rec, "looked dead"); !errors.Is(err, idem.ErrWrongState) || errors.Is(err, idem.ErrRecordChanged) {
		t.Fatalf("lapse of a key completed since the read: %v, want ErrWrongState", err)
	}
	if res, err := f.Store.Do(ctx, r, ok); err != nil || !res.Replayed || res.Response.StatusCode != 201 {
		t.Fatalf("after the refused lapse: %+v %v, want the holder's 201 replayed", res, err)
	}
}

func TestLapseRefusesACompletedKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.Store.Do(ctx, req("bob", "k2", `{}`), ok); err != nil {
		t.Fatal(err)
	}
	rec, err := f.Store.Inspect(ctx, "bob", "k2")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Store.Lapse(ctx, rec, "mistake"); !errors.Is(err, idem.ErrWrongState) {
		t.Fatalf("lapse of a completed key: %v, want ErrWrongState", err)
	}
	if res, err := f.Store.Do(ctx, req("bob", "k2", `{}`), ok); err != nil || !res.Replayed {
		t.Fatalf("after the refused lapse: %+v %v, want a replay", res, err)
	}
}

func TestDeleteOnlyTheCompletedRecordAsRead(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ops, log := adminLog(f)
	if _, err := f.Store.Do(ctx, req("carol", "k1", `{}`), ok); err != nil {
		t.Fatal(err)
	}
	rec, err := ops.Inspect(ctx, "carol", "k1")
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.Delete(ctx, rec, ""); !errors.Is(err, idem.ErrNoReason) {
		t.Fatalf("delete without a reason: %v", err)
	}
	if err := ops.Delete(ctx, rec, "customer asked to resend, ticket 7"); err != nil {
		t.Fatal(err)
	}
	if item := f.Record("carol", "k1"); item != nil {
		t.Fatalf("still there: %v", item)
	}
	// Deleted already (by another operator, or by this read's earlier
	// call): there is no record, which is not a record changed.
	if err := ops.Delete(ctx, rec, "sent twice"); !errors.Is(err, idem.ErrNoRecord) || errors.Is(err, idem.ErrRecordChanged) {
		t.Fatalf("delete of a record deleted already: %v, want ErrNoRecord", err)
	}
	if !strings.Contains(log.String(), `"action":"delete"`) || !strings.Contains(log.String(), "ticket 7") {
		t.Fatalf("log %s", log)
	}
	// The key is used again: a new record, under a new lease token. The
	// operator's old read must not delete it.
	if _, err := f.Store.Do(ctx, req("carol", "k1", `{"again":true}`), ok); err != nil {
		t.Fatal(err)
	}
	if err := ops.Delete(ctx, rec, "stale read"); !errors.Is(err, idem.ErrRecordChanged) {
		t.Fatalf("delete on a stale read: %v, want ErrRecordChanged", err)
	}
	if f.Record("carol", "k1") == nil {
		t.Fatal("the new record was deleted on a stale read")
	}
}

func TestDeleteRefusesAKeyInProgress(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var rec *idem.KeyRecord
	if _, err := f.Store.Do(ctx, req("dave", "k1", `{}`), func(ctx context.Context, _ *idem.Tx) (idem.Response, error) {
		var err error
		rec, err = f.Store.Inspect(ctx, "dave", "k1")
		return idem.Response{StatusCode: 200}, err
	}); err != nil {
		t.Fatal(err)
	}
	if rec == nil || rec.Status != "IN_PROGRESS" {
		t.Fatalf("read in progress: %+v", rec)
	}
	if err := f.Store.Delete(ctx, rec, "stuck"); !errors.Is(err, idem.ErrWrongState) {
		t.Fatalf("delete in progress: %v, want ErrWrongState", err)
	}
}

// TestDeleteForgetsTheKeyInThisStoresCache: after a Delete, the Store that
// deleted answers from the table, not its cache: the original request runs
// its work again and another request under the key is no longer 422. An
// answer read before the delete is not put back into the cache after.
func TestDeleteForgetsTheKeyInThisStoresCache(t *testing.T) {
	f := newFixture(t, withCache(100, 1<<20))
	ctx := context.Background()
	var runs atomic.Int32
	for range 2 { // the second a replay, which the cache then holds
		if _, err := f.Store.Do(ctx, req("erin", "k1", `{"v":1}`), f.createOrder("erin", "o1", &runs)); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := f.Store.Inspect(ctx, "erin", "k1")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Store.Delete(ctx, rec, "customer asked to resend"); err != nil {
		t.Fatal(err)
	}
	calls := f.DB.Total()
	res, err := f.Store.Do(ctx, req("erin", "k1", `{"v":2}`), f.createOrder("erin", "o2", &runs))
	if err != nil || res.Replayed || runs.Load() != 2 || f.DB.Total() == calls {
		t.Fatalf("another request after the delete: %+v, %v after %d runs; want its work run, from the table", res, err, runs.Load())
	}
}

// TestDeleteWhoseAnswerWasLostIsADelete: the delete reaches the engine and
// its answer is dropped; the SDK sends it again (once: DynamoDB answers the
// token's first success), or every answer is lost (Delete reads the record
// back and finds it gone). Both are the one delete: nil, the audit line
// written, the record gone.
func TestDeleteWhoseAnswerWasLostIsADelete(t *testing.T) {
	for _, times := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d answers lost", times), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			var buf bytes.Buffer
			proxy, ops := f.proxied(func(o *idem.Options) { o.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) })
			if _, err := f.Store.Do(ctx, req("frank", "k1", `{}`), ok); err != nil {
				t.Fatal(err)
			}
			rec, err := ops.Inspect(ctx, "frank", "k1")
			if err != nil {
				t.Fatal(err)
			}
			proxy.Inject(faultproxy.Fault{Kind: faultproxy.CommitThenDrop, Times: times}) // the delete, whichever call it is
			err = ops.Delete(ctx, rec, "ticket 9")
			mustInject(t, proxy, faultproxy.CommitThenDrop, times)
			if err != nil {
				t.Fatalf("delete whose answer was lost: %v, want nil", err)
			}
			if f.Record("frank", "k1") != nil {
				t.Fatal("the record is still there")
			}
			if !strings.Contains(buf.String(), `"action":"delete"`) || !strings.Contains(buf.String(), "ticket 9") {
				t.Fatalf("no audit line: %s", buf.String())
			}
			if lost := strings.Contains(buf.String(), `"answer_lost":true`); lost != (times == 3) {
				t.Fatalf("answer_lost in the audit line is %v with %d answers lost: %s", lost, times, buf.String())
			}
		})
	}
}

// TestDeleteDoesNotReachOtherEnvironmentsCaches holds Delete's doc: another
// execution environment that cached the response still replays it after the
// delete, from its cache, until its entry expires; without the cache it
// runs the work again.
func TestDeleteDoesNotReachOtherEnvironmentsCaches(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cached := f.NewStore(withCache(100, 1<<20)) // another execution environment
	var runs atomic.Int32
	for range 2 { // the second fills its cache
		if _, err := cached.Do(ctx, req("gina", "k1", `{}`), f.createOrder("gina", "o1", &runs)); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := f.Store.Inspect(ctx, "gina", "k1")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Store.Delete(ctx, rec, "resend"); err != nil {
		t.Fatal(err)
	}
	if res, err := cached.Do(ctx, req("gina", "k1", `{}`), f.createOrder("gina", "o1", &runs)); err != nil || !res.Replayed || runs.Load() != 1 {
		t.Fatalf("the other environment after the delete: %+v, %v after %d runs; want its cached replay", res, err, runs.Load())
	}
	if res, err := f.Store.Do(ctx, req("gina", "k1", `{}`), f.createOrder("gina", "o2", &runs)); err != nil || res.Replayed || runs.Load() != 2 {
		t.Fatalf("an environment without the cache: %+v, %v after %d runs; want the work run again", res, err, runs.Load())
	}
}

// The delete lands, every answer is lost, and the customer's resend claims
// the key before Delete reads back: the record Delete was given is gone, so
// it is the delete, with its audit line (it was ErrRecordChanged, no line).
func TestALostDeleteThenAReclaimIsADelete(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.Store.Do(ctx, req("frank", "k1", `{}`), ok); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	fa := &faulty{DynamoDBAPI: f.DB}
	fa.tx = func(ctx context.Context, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		if _, err := f.DB.TransactWriteItems(ctx, in); err != nil {
			t.Fatal(err)
		}
		// the resend the operator asked for arrives now, on another Lambda
		if _, err := f.Store.Do(ctx, req("frank", "k1", `{}`), ok); err != nil {
			t.Fatal(err)
		}
		return nil, apiError("InternalServerError")
	}
	ops, _ := idem.New(fa, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now; o.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) })
	rec, err := ops.Inspect(ctx, "frank", "k1")
	if err != nil {
		t.Fatal(err)
	}
	err = ops.Delete(ctx, rec, "ticket 9")
	if errors.Is(err, idem.ErrRecordChanged) || !strings.Contains(buf.String(), "ticket 9") {
		t.Fatalf("the delete landed, yet Delete said %v and logged %q", err, buf.String())
	}
}
