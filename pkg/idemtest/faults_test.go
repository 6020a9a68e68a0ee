package idemtest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// recorder is a testing.TB that keeps what the kit reports, so that a test
// can check the report itself; its cleanups run at end.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *recorder) end() []string {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r.errs
}

// items is a table of string keys "pk" and calls that put and read its items.
type items struct {
	t     *testing.T
	raw   *dynamodb.Client
	table string
}

func newItems(t *testing.T) items {
	db := idemtest.Client(t)
	return items{t: t, raw: db, table: idemtest.Table(t, db)}
}

func (it items) put(api idem.DynamoDBAPI, pk string) error {
	_, err := api.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(it.table), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}})
	return err
}

func (it items) there(pk string) bool {
	it.t.Helper()
	out, err := it.raw.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(it.table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		it.t.Fatal(err)
	}
	return len(out.Item) > 0
}

func TestFaultsChooseCallsByOperationAndCount(t *testing.T) {
	it := newItems(t)
	rec := &recorder{TB: t}
	f := idemtest.NewFaults(rec, it.raw)
	f.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Throttle, Nth: 2, Times: 2})
	f.Inject(idemtest.Fault{Op: idemtest.GetItem, Kind: idemtest.LostAnswer})
	var got []bool
	for _, pk := range []string{"a", "b", "c", "d"} {
		got = append(got, it.put(f, pk) == nil)
	}
	if want := []bool{true, false, false, true}; !slices.Equal(got, want) {
		t.Errorf("puts succeeded %v, want %v: the 2nd and 3rd throttled", got, want)
	}
	if _, err := f.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(it.table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}}); err == nil {
		t.Error("the GetItem was not faulted")
	}
	if f.Calls(idemtest.PutItem) != 4 || f.Injected(idemtest.PutItem) != 2 || f.Calls(idemtest.GetItem) != 1 || f.Injected(idemtest.GetItem) != 1 || f.Calls(idemtest.UpdateItem) != 0 {
		t.Errorf("calls/injected: PutItem %d/%d, GetItem %d/%d, UpdateItem %d; want 4/2, 1/1, 0",
			f.Calls(idemtest.PutItem), f.Injected(idemtest.PutItem), f.Calls(idemtest.GetItem), f.Injected(idemtest.GetItem), f.Calls(idemtest.UpdateItem))
	}
	if errs := rec.end(); len(errs) != 0 {
		t.Errorf("every fault was injected, yet the test was failed: %q", errs)
	}
}

// A fault that its calls never met, or that another fault took a call from,
// fails the test: it tested nothing.
func TestAFaultNotInjectedFailsTheTest(t *testing.T) {
	it := newItems(t)
	rec := &recorder{TB: t}
	f := idemtest.NewFaults(rec, it.raw)
	f.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer})
	f.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Throttle, Times: 2})
	f.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Conflict, Nth: 2}) // the Throttle takes its call
	// Both throttled: the reports are what is checked.
	_, _ = it.put(f, "a"), it.put(f, "b")
	errs := rec.end()
	if len(errs) != 2 || !strings.Contains(errs[0], "Conflict on PutItem") || !strings.Contains(errs[1], "LostAnswer on TransactWriteItems") {
		t.Fatalf("reports = %q, want the Conflict and the LostAnswer reported as not injected", errs)
	}
	if !strings.Contains(errs[1], "did not reach the call") {
		t.Errorf("report %q does not say what went wrong", errs[1])
	}
}

// A lost answer lands, and comes back as the SDK's error for a call whose
// every attempt timed out: a timeout, and retryable, to the SDK's own
// classifiers.
func TestLostAnswerLandsAndLooksLikeATimeout(t *testing.T) {
	it := newItems(t)
	f := idemtest.NewFaults(t, it.raw)
	f.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.LostAnswer})
	err := it.put(f, "a")
	if !it.there("a") {
		t.Fatal("the call did not land")
	}
	var op *smithy.OperationError
	var ne net.Error
	switch {
	case !errors.As(err, &op) || op.Service() != "DynamoDB" || op.Operation() != "PutItem":
		t.Errorf("err = %v, want the SDK's *smithy.OperationError for PutItem", err)
	case !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout():
		t.Errorf("err = %v, want a timeout (context.DeadlineExceeded, a net.Error whose Timeout is true)", err)
	case retry.IsErrorTimeouts(retry.DefaultTimeouts).IsErrorTimeout(err) != aws.TrueTernary:
		t.Errorf("the SDK does not take %v for a timeout", err)
	case !retry.NewStandard().IsErrorRetryable(err):
		t.Errorf("the SDK would not retry %v", err)
	case !strings.Contains(err.Error(), "injected by idemtest"):
		t.Errorf("err = %v does not say it was injected", err)
	}
}

func TestLandLateLandsAfterTheCallerGaveUp(t *testing.T) {
	it := newItems(t)
	f := idemtest.NewFaults(t, it.raw)
	f.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.LandLate, Delay: 300 * time.Millisecond})
	start := time.Now()
	err := it.put(f, "a")
	if took := time.Since(start); took > 200*time.Millisecond || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v after %v; want a timeout at once", err, took)
	}
	if it.there("a") {
		t.Fatal("the call landed before its delay")
	}
	f.Landed()
	if !it.there("a") {
		t.Fatal("the call never landed")
	}
}

// Throttle and Conflict refuse the call, which never lands, with the
// service's exceptions, as the SDK classifies them: a throttle retried as
// one, a conflict not retried at all.
func TestThrottleAndConflictRefuseTheCall(t *testing.T) {
	it := newItems(t)
	f := idemtest.NewFaults(t, it.raw)
	f.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Throttle})
	err := it.put(f, "a")
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) || retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) != aws.TrueTernary {
		t.Errorf("throttled: %v, want a ProvisionedThroughputExceededException the SDK takes for a throttle", err)
	}
	f.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Conflict})
	err = it.put(f, "b")
	var tce *types.TransactionConflictException
	if !errors.As(err, &tce) || retry.NewStandard().IsErrorRetryable(err) {
		t.Errorf("conflict: %v, want a TransactionConflictException, which the SDK does not retry", err)
	}
	if it.there("a") || it.there("b") {
		t.Error("a refused call landed")
	}
	f.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.Conflict})
	put := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(it.table), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}}}
	}
	_, err = f.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put("c"), put("d")}})
	var cancelled *types.TransactionCanceledException
	if !errors.As(err, &cancelled) || len(cancelled.CancellationReasons) != 2 ||
		aws.ToString(cancelled.CancellationReasons[0].Code) != "TransactionConflict" || aws.ToString(cancelled.CancellationReasons[1].Code) != "None" {
		t.Errorf("transaction conflict: %v, want a cancellation with reasons [TransactionConflict, None]", err)
	}
	if it.there("c") || it.there("d") {
		t.Error("a refused transaction landed")
	}
}

func TestSlowHoldsTheCallUnlessItsContextEnds(t *testing.T) {
	it := newItems(t)
	f := idemtest.NewFaults(t, it.raw)
	f.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Slow, Delay: 200 * time.Millisecond, Times: 2})
	start := time.Now()
	if err := it.put(f, "a"); err != nil || time.Since(start) < 200*time.Millisecond || !it.there("a") {
		t.Fatalf("slow call: %v after %v; want it landed after 200ms", err, time.Since(start))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := f.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(it.table), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "b"}}})
	var canceled *smithy.CanceledError
	if !errors.As(err, &canceled) || !errors.Is(err, context.DeadlineExceeded) || it.there("b") {
		t.Fatalf("slow call past its deadline: %v; want the SDK's cancellation, and nothing landed", err)
	}
}

func TestInjectRefusesAFaultDynamoDBCannotGive(t *testing.T) {
	f := idemtest.NewFaults(t, nil)
	for _, fault := range []idemtest.Fault{{Op: idemtest.GetItem, Kind: idemtest.Conflict}, {Op: "DeleteItem", Kind: idemtest.Throttle}, {Op: idemtest.PutItem}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Inject(%v) did not panic", fault)
				}
			}()
			f.Inject(fault)
		}()
	}
}

// A storm takes every call of its Op from its Nth on, for For from the
// first it took, and no other op's; one that took a call is no fault not
// injected, one that took none is.
func TestAStormTakesEveryCallOfItsOpForItsDuration(t *testing.T) {
	it := newItems(t)
	rec := &recorder{TB: t}
	f := idemtest.NewFaults(rec, it.raw)
	const storm = 300 * time.Millisecond
	f.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Throttle, Nth: 2, For: storm})
	f.Inject(idemtest.Fault{Op: idemtest.UpdateItem, Kind: idemtest.Throttle, For: storm}) // never met
	if err := it.put(f, "before"); err != nil {
		t.Fatalf("the call before the storm's Nth: %v", err)
	}
	start := time.Now()
	for i := range 5 {
		if err := it.put(f, fmt.Sprint("during-", i)); err == nil {
			t.Fatalf("call %d of the storm, %v after its first, was not throttled", i, time.Since(start))
		}
	}
	time.Sleep(storm - time.Since(start) + 50*time.Millisecond)
	if err := it.put(f, "after"); err != nil || !it.there("after") {
		t.Fatalf("the call after the storm: %v", err)
	}
	if f.Injected(idemtest.PutItem) != 5 || f.Calls(idemtest.PutItem) != 7 {
		t.Errorf("PutItem injected %d of %d calls, want 5 of 7", f.Injected(idemtest.PutItem), f.Calls(idemtest.PutItem))
	}
	errs := rec.end()
	if len(errs) != 1 || !strings.Contains(errs[0], "Throttle on UpdateItem from call 1, every call for 300ms") {
		t.Fatalf("reports = %q, want only the storm that met no call", errs)
	}
}

// A fault on TransactWriteItems that meets no call, where the commit was a
// PutItem (no business writes), says so: the user's test names the wrong
// call.
func TestAFaultOnACommitThatWasAPutItemSaysSo(t *testing.T) {
	db := idemtest.Client(t)
	rec := &recorder{TB: t}
	f := idemtest.NewFaults(rec, db)
	store, err := idem.New(f, idemtest.Table(t, db))
	if err != nil {
		t.Fatal(err)
	}
	f.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer})
	_, _ = store.DoAtomic(context.Background(), idem.Request{Scope: "alice", Key: "k1", Fingerprint: "v1"}, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) { // the reports are what is checked
		return idem.Response{StatusCode: 200}, nil
	})
	errs := rec.end()
	if len(errs) != 1 || !strings.Contains(errs[0], "a commit with no business write is a PutItem") {
		t.Fatalf("reports = %q, want the fault not injected, and why", errs)
	}
}
