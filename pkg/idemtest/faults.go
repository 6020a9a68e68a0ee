package idemtest

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/idemkeys/idem/pkg/idem"
)

// Op names a call of idem.DynamoDBAPI, the calls a Store makes.
type Op string

// The operations a Store calls. A first request under Do claims its key
// with a PutItem and commits with a TransactWriteItems (a PutItem, the
// second, when the work adds no business write); under DoAtomic its commit
// is its only call, a TransactWriteItems (a PutItem without business
// writes). A lapse is an UpdateItem; GetItem reads a record only where the
// protocol must look again. The package doc, "What the counts count", has
// every request's calls on each path.
const (
	PutItem            Op = "PutItem"
	GetItem            Op = "GetItem"
	UpdateItem         Op = "UpdateItem"
	TransactWriteItems Op = "TransactWriteItems"
)

// AnyOp, as a Fault's Op, takes calls of every operation, counted together
// in the order they are made: Fault{Kind: Throttle, For: time.Minute} is a
// throttle storm on every call, and Nth: 2 the second call, whatever its
// operation. Calls(AnyOp) and Injected(AnyOp) are the totals over every
// operation.
const AnyOp Op = ""

// Kind is what a fault does to a call. Each returns the error the AWS SDK
// returns for that case, as the types the SDK builds (a *smithy.OperationError
// around the HTTP response error and the service's exception), so that the
// Store takes it as it takes the real one. The faults act on the Store's
// calls as the Store sees them, after the SDK's own retries.
type Kind int

const (
	// LostAnswer makes the call, which reaches the engine and acts there
	// (or is refused), and returns a timeout in place of its answer: the
	// SDK's error when every attempt timed out awaiting the response
	// (errors.Is(err, context.DeadlineExceeded) holds). The caller cannot
	// tell whether it landed.
	LostAnswer Kind = iota + 1
	// LandLate returns the same timeout at once and makes the call Delay
	// later, after its caller gave up on it: a request in flight that lands
	// late. Faults.Landed waits for it.
	LandLate
	// Throttle refuses the call without making it, with DynamoDB's
	// ProvisionedThroughputExceededException: what the SDK returns when it
	// was throttled past its retries.
	Throttle
	// Conflict refuses a write without making it, as DynamoDB refuses one
	// that meets a transaction in flight on its item: a PutItem or
	// UpdateItem with TransactionConflictException (which the SDK does not
	// retry), a TransactWriteItems with TransactionCanceledException whose
	// first item's reason is TransactionConflict. DynamoDB refuses no GetItem
	// so, and neither does Conflict.
	Conflict
	// Slow holds the call for Delay, then makes it and returns its answer;
	// if the call's context ends first, the call is not made and the SDK's
	// cancellation comes back.
	Slow
	// CrashBefore kills the invocation that makes the call (see Invoke) as
	// it sends it: the call never lands, and the invocation never returns.
	CrashBefore
	// CrashAfter makes the call, which lands on the engine (or is refused
	// there), then kills the invocation that made it (see Invoke) before
	// it reads the answer.
	CrashAfter
)

var kindNames = map[Kind]string{LostAnswer: "LostAnswer", LandLate: "LandLate", Throttle: "Throttle", Conflict: "Conflict", Slow: "Slow", CrashBefore: "CrashBefore", CrashAfter: "CrashAfter"}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "Kind(" + fmt.Sprint(int(k)) + ")"
}

// Fault chooses calls by operation and count, and says what to do to them.
type Fault struct {
	Op   Op // the operation whose calls it takes; AnyOp (the zero value): every operation's
	Kind Kind
	// Nth is the first call of Op the fault takes, counted from the
	// Inject: 1 (or 0) is the next call of Op, 2 the one after.
	Nth int
	// Times is how many calls of Op in a row it takes, from the Nth on
	// (default 1).
	Times int
	// For, when positive, makes the fault a storm: it takes every call of
	// Op from the Nth on, until For has passed on the real clock since the
	// first call it took (Times is then ignored). The Store's own retries
	// wait on the real clock, which is why this one is not Store.Clock.
	For time.Duration
	// Delay is how late a LandLate call lands and how long a Slow one is
	// held (default 100ms).
	Delay time.Duration
}

func (f Fault) String() string {
	op := string(f.Op)
	if f.Op == AnyOp {
		op = "any operation"
	}
	if f.For > 0 {
		return fmt.Sprintf("%v on %s from call %d, every call for %v", f.Kind, op, f.Nth, f.For)
	}
	return fmt.Sprintf("%v on %s call %d (%d in a row)", f.Kind, op, f.Nth, f.Times)
}

// Faults is an idem.DynamoDBAPI that passes each call to the one it wraps,
// unless an injected Fault takes it, and counts calls, faults and commits.
// It is safe for concurrent use.
//
// A fault injected but never met by its call fails the test when it ends:
// a fault that was not injected tests nothing.
type Faults struct {
	t        testing.TB
	api      idem.DynamoDBAPI
	endpoint string // for the errors' text

	mu       sync.Mutex
	queue    []*queued
	missed   []Fault
	calls    map[Op]int
	injected map[Op]int
	commits  int
	late     sync.WaitGroup

	putCommit atomic.Bool // a commit was a PutItem: for the report of a fault not injected
}

// queued is a fault waiting for calls from to to (numbers of its Op's
// calls, inclusive), and how many it has taken; a storm's until is when it
// ends, set by the first call it takes.
type queued struct {
	Fault
	from, to, taken int
	until           time.Time
}

// NewFaults wraps api. When the test ends it waits for every LandLate call
// to land, then fails the test for every fault that did not take each call
// it named.
func NewFaults(t testing.TB, api idem.DynamoDBAPI) *Faults {
	f := &Faults{t: t, api: api, endpoint: "https://dynamodb." + region + ".amazonaws.com/", calls: map[Op]int{}, injected: map[Op]int{}}
	if c, ok := api.(*dynamodb.Client); ok && c.Options().BaseEndpoint != nil {
		f.endpoint = *c.Options().BaseEndpoint
	}
	t.Cleanup(func() {
		f.Landed()
		for _, fault := range f.unmet() {
			hint := ""
			if fault.Op == TransactWriteItems && f.Calls(TransactWriteItems) == 0 && f.putCommit.Load() {
				hint = "; a commit with no business write is a PutItem, not a TransactWriteItems"
			}
			t.Errorf("idemtest: fault %v was not injected on every call it names: the test did not reach the call it meant to fault (Faults.Calls(%q) = %d%s)", fault, fault.Op, f.Calls(fault.Op), hint)
		}
	})
	return f
}

// Inject queues a fault. It panics for an unknown operation or kind, and
// for a Conflict on GetItem or on AnyOp.
func (f *Faults) Inject(fault Fault) {
	switch fault.Op {
	case AnyOp, PutItem, GetItem, UpdateItem, TransactWriteItems:
	default:
		panic(fmt.Sprintf("idemtest: Inject: unknown operation %q: want PutItem, GetItem, UpdateItem, TransactWriteItems or AnyOp", fault.Op))
	}
	if _, ok := kindNames[fault.Kind]; !ok {
		panic(fmt.Sprintf("idemtest: Inject: unknown kind %v", fault.Kind))
	}
	if fault.Kind == Conflict && (fault.Op == GetItem || fault.Op == AnyOp) {
		panic("idemtest: Inject: DynamoDB refuses no GetItem for a transaction in flight, so a Conflict names the write it refuses")
	}
	fault.Nth, fault.Times = max(fault.Nth, 1), max(fault.Times, 1)
	if fault.Delay <= 0 {
		fault.Delay = 100 * time.Millisecond
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	from := f.calls[fault.Op] + fault.Nth
	to := from + fault.Times - 1
	if fault.For > 0 {
		to = math.MaxInt
	}
	f.queue = append(f.queue, &queued{Fault: fault, from: from, to: to})
}

// Calls is how many calls of op the Stores made through f so far, in
// every role (a claim, a commit, a lapse, a hand-back, a duplicate's
// refused claim or commit), faulted ones included: see the package doc,
// "What the counts count".
func (f *Faults) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Injected is how many calls of op a fault took so far.
func (f *Faults) Injected(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected[op]
}

// Commits is how many commits landed through f: calls, on either path
// (Do's or DoAtomic's, a TransactWriteItems or a PutItem), that wrote a
// completed idempotency record and that the engine took, whatever answer
// the Store got back (a LostAnswer's, a CrashAfter's) and whenever it
// landed (a LandLate's, once it has). A refused commit (a duplicate's
// under DoAtomic, a fenced holder's) is none. Each commit is one answer
// committed with the work's writes, so Commits() == 1 says "the work took
// effect once" on every path, where Calls(TransactWriteItems) does not;
// a ConflictFunc's answer commits too, without the writes it refused.
func (f *Faults) Commits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commits
}

// Landed waits until every LandLate call made so far has landed.
func (f *Faults) Landed() { f.late.Wait() }

// take counts a call of op and returns the fault that takes it, if any: the
// first injected whose calls include this one.
func (f *Faults) take(op Op) (Fault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	f.calls[AnyOp]++
	now := time.Now()
	var hit *queued
	kept := f.queue[:0]
	for _, q := range f.queue {
		mine, n := q.Op == op || q.Op == AnyOp, f.calls[q.Op]
		if mine && !q.until.IsZero() && !now.Before(q.until) {
			continue // a storm that is over
		}
		if mine && hit == nil && q.from <= n && n <= q.to {
			hit = q
			q.taken++
			if q.For > 0 && q.until.IsZero() {
				q.until = now.Add(q.For)
			}
		}
		switch {
		case !mine || n < q.to:
			kept = append(kept, q)
		case q.taken < q.Times:
			f.missed = append(f.missed, q.Fault) // another fault took one of its calls
		}
	}
	f.queue = kept
	if hit == nil {
		return Fault{}, false
	}
	f.injected[op]++
	f.injected[AnyOp]++
	return hit.Fault, true
}

// unmet are the faults that did not take every call they name: a storm
// that took none, a fault that missed one of its calls.
func (f *Faults) unmet() []Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]Fault(nil), f.missed...)
	for _, q := range f.queue {
		if q.For <= 0 || q.taken == 0 {
			out = append(out, q.Fault)
		}
	}
	return out
}

// PutItem, GetItem, UpdateItem and TransactWriteItems make the call, or do
// to it what the fault that takes it says.
func (f *Faults) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return faulted(ctx, f, call[dynamodb.PutItemOutput]{op: PutItem, items: 1, in: in,
		send: func(ctx context.Context) (*dynamodb.PutItemOutput, error) { return f.api.PutItem(ctx, in, o...) }})
}

func (f *Faults) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return faulted(ctx, f, call[dynamodb.GetItemOutput]{op: GetItem, items: 1, in: in,
		send: func(ctx context.Context) (*dynamodb.GetItemOutput, error) { return f.api.GetItem(ctx, in, o...) }})
}

func (f *Faults) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return faulted(ctx, f, call[dynamodb.UpdateItemOutput]{op: UpdateItem, items: 1, in: in,
		send: func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) { return f.api.UpdateItem(ctx, in, o...) }})
}

func (f *Faults) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return faulted(ctx, f, call[dynamodb.TransactWriteItemsOutput]{op: TransactWriteItems, items: len(in.TransactItems), in: in,
		send: func(ctx context.Context) (*dynamodb.TransactWriteItemsOutput, error) {
			return f.api.TransactWriteItems(ctx, in, o...)
		}})
}

// call is one call of op, with items actions, its input in, made by send.
type call[Out any] struct {
	op    Op
	items int
	in    any
	send  func(context.Context) (*Out, error)
}

// faulted makes c, as the fault that takes it says, if one does. An
// invocation that crashed makes none.
func faulted[Out any](ctx context.Context, f *Faults, c call[Out]) (*Out, error) {
	op, items := c.op, c.items
	inv := invocationOf(ctx)
	if inv.isDead() {
		f.afterDeath(op) // does not return
	}
	commit := commits(c.in)
	if commit && op == PutItem {
		f.putCommit.Store(true)
	}
	made := func(ctx context.Context) (*Out, error) {
		out, err := c.send(ctx)
		if err == nil && commit {
			f.mu.Lock()
			f.commits++
			f.mu.Unlock()
		}
		return out, err
	}
	fault, ok := f.take(op)
	if !ok {
		return made(ctx)
	}
	switch fault.Kind {
	case LostAnswer:
		_, _ = made(ctx) // it lands; its answer goes nowhere
		return nil, f.timedOut(op, fault.Kind)
	case LandLate:
		f.late.Add(1)
		go func() {
			defer f.late.Done()
			time.Sleep(fault.Delay)
			_, _ = made(context.WithoutCancel(ctx)) // its answer goes nowhere: the caller was told it timed out
		}()
		return nil, f.timedOut(op, fault.Kind)
	case Throttle:
		return nil, sdkError(op, http.StatusBadRequest, sdkAttempts, &types.ProvisionedThroughputExceededException{
			Message: aws.String("The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API. (injected by idemtest)"),
		})
	case Conflict:
		return nil, conflict(op, items)
	case CrashBefore, CrashAfter:
		if inv == nil {
			f.t.Errorf("idemtest: fault %v took a call made outside Invoke, which it let through: a crash kills an invocation that Invoke runs, whose context the call must carry", fault)
			return made(ctx)
		}
		if fault.Kind == CrashAfter {
			_, _ = made(ctx) // it lands; the invocation dies before the answer
		}
		inv.die() // does not return
	}
	select { // Slow
	case <-time.After(fault.Delay):
		return made(ctx)
	case <-ctx.Done():
		return nil, sdkError(op, 0, 0, &smithy.CanceledError{Err: ctx.Err()})
	}
}

// sdkAttempts is the number of attempts of the SDK's standard retryer, the
// default: an error it retries comes back after that many.
const sdkAttempts = 3

// sdkError is err as the SDK returns it: in the HTTP response error (status
// 0 when there was no response), after attempts attempts if it retried
// (0: it does not retry such an error), in the operation error.
func sdkError(op Op, status, attempts int, err error) error {
	var requestID string
	if status != 0 {
		requestID = rand.Text() + rand.Text()
	}
	err = &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}}, Err: err},
		RequestID:     requestID,
	}
	if attempts > 0 {
		err = &retry.MaxAttemptsError{Attempt: attempts, Err: err}
	}
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: string(op), Err: err}
}

// timedOut is the SDK's error for a call whose every attempt timed out
// awaiting its response.
func (f *Faults) timedOut(op Op, kind Kind) error {
	return sdkError(op, 0, sdkAttempts, &smithyhttp.RequestSendError{Err: &url.Error{Op: "Post", URL: f.endpoint, Err: timeout{kind}}})
}

// timeout is what net/http's client returns when its Timeout ends while it
// awaits the response: a net.Error whose Timeout is true, and
// context.DeadlineExceeded to errors.Is.
type timeout struct{ kind Kind }

func (e timeout) Error() string {
	what := "the call landed; its answer was lost"
	if e.kind == LandLate {
		what = "the call lands later"
	}
	return "context deadline exceeded (Client.Timeout exceeded while awaiting headers; injected by idemtest: " + e.kind.String() + ", " + what + ")"
}

func (timeout) Timeout() bool        { return true }
func (timeout) Temporary() bool      { return true }
func (timeout) Is(target error) bool { return target == context.DeadlineExceeded }

// conflict is DynamoDB's refusal of a write that meets a transaction in
// flight on its item, the transaction's first.
func conflict(op Op, items int) error {
	const msg = "Transaction is ongoing for the item"
	if op != TransactWriteItems {
		return sdkError(op, http.StatusBadRequest, 0, &types.TransactionConflictException{Message: aws.String(msg + " (injected by idemtest)")})
	}
	reasons := make([]types.CancellationReason, max(items, 1))
	codes := make([]string, len(reasons))
	for i := range reasons {
		reasons[i].Code, codes[i] = aws.String("None"), "None"
	}
	reasons[0] = types.CancellationReason{Code: aws.String("TransactionConflict"), Message: aws.String(msg)}
	codes[0] = "TransactionConflict"
	return sdkError(op, http.StatusBadRequest, 0, &types.TransactionCanceledException{
		Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "] (injected by idemtest)"),
		CancellationReasons: reasons,
	})
}
