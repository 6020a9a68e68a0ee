package idem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// The secrets every traced path carries: a span must hold none of them,
// whole or in part.
const (
	secretScope    = "tenant-SECRET-scope"
	secretKey      = "SECRET-key-0001"
	secretBody     = `{"card":"SECRET-body"}`
	secretResponse = `{"token":"SECRET-response"}`
	secretHeader   = "SECRET-header"
	secretErr      = "SECRET-work-error"
)

var secretReq = req(secretScope, secretKey, secretBody)

// secretWork answers 201 with the secret response and header, after a
// business write.
func (f *fixture) secretWork(id string) idem.Work {
	return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(f.OrderPut(secretScope, id, "traced"), nil)
		return idem.Response{StatusCode: 201, Header: map[string]string{"X-Token": secretHeader}, Body: []byte(secretResponse)}, nil
	}
}

// answered is a work's error that carries the answer to send, as a
// door's error for a refused request does.
type answered struct{ resp idem.Response }

func (e *answered) Error() string           { return "answered " + strconv.Itoa(e.resp.StatusCode) }
func (e *answered) Response() idem.Response { return e.resp }

// failingWithSecret is a work whose error carries a secret, as a work's own error
// may: its text must not reach a span.
func failingWithSecret(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
	return idem.Response{}, fmt.Errorf("provider said no to %s: %s", secretKey, secretErr)
}

// recorded is every span the traced tests end, for the scan for secrets.
var recorded struct {
	sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

// tracer is a TracerProvider of the SDK that keeps what it ends in memory.
type tracer struct {
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
}

func newTracer(t *testing.T) *tracer {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := &tracer{rec, tp}
	t.Cleanup(func() {
		recorded.Lock()
		defer recorded.Unlock()
		recorded.spans = append(recorded.spans, rec.Ended()...)
	})
	return tr
}

func (tr *tracer) opt(o *idem.Options) { o.TracerProvider = tr.tp }

// last is the span of the last call that ended.
func (tr *tracer) last(t *testing.T) span {
	t.Helper()
	ended := tr.rec.Ended()
	if len(ended) == 0 {
		t.Fatal("no span ended")
	}
	return span{ended[len(ended)-1]}
}

// span reads a recorded span as the tests compare it.
type span struct{ sdktrace.ReadOnlySpan }

func (s span) attr(key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// steps are the span's events, each as its name and its word (result,
// call or record), "exception" as its type.
func (s span) steps() []string {
	var out []string
	for _, e := range s.Events() {
		step := e.Name
		for _, kv := range e.Attributes {
			switch kv.Key {
			case "idem.result", "idem.call", "idem.record", "exception.type":
				step += " " + kv.Value.String()
			}
		}
		out = append(out, step)
	}
	return out
}

// want is what a test expects of a call's span.
type want struct {
	name     string
	outcome  idem.Outcome
	steps    []string
	calls    int64
	errType  string // "": the status is Unset and there is no error.type
	cacheHit bool
	takeover bool
}

func (s span) check(t *testing.T, w want) {
	t.Helper()
	path := "do"
	if w.name == "idem.DoAtomic" {
		path = "atomic"
	}
	got := fmt.Sprintf("%s outcome=%s path=%s key_hash=%s calls=%d cache_hit=%v takeover=%v error.type=%q status=%v",
		s.Name(), s.attr("idem.outcome").AsString(), s.attr("idem.path").AsString(), s.attr("idem.key_hash").AsString(),
		s.attr("idem.dynamodb.calls").AsInt64(), s.attr("idem.cache_hit").AsBool(), s.attr("idem.takeover").AsBool(),
		s.attr("error.type").AsString(), s.Status().Code)
	status := codes.Unset
	if w.errType != "" {
		status = codes.Error
	}
	wantLine := fmt.Sprintf("%s outcome=%s path=%s key_hash=%s calls=%d cache_hit=%v takeover=%v error.type=%q status=%v",
		w.name, w.outcome, path, idem.KeyHash(secretScope, secretKey), w.calls, w.cacheHit, w.takeover, w.errType, status)
	if got != wantLine {
		t.Errorf("span:\n got  %s\n want %s", got, wantLine)
	}
	if steps := s.steps(); !slices.Equal(steps, w.steps) {
		t.Errorf("%s steps:\n got  %q\n want %q", s.Name(), steps, w.steps)
	}
}

// onTheLast is a fault's Reached that runs fn when the fault acts for the
// n-th time, its last: what happens between the last unanswered send and
// what the Store does next.
func onTheLast(n int, fn func()) func() {
	seen := 0
	return func() {
		if seen++; seen == n {
			fn()
		}
	}
}

// TestEveryPathIsOneSpanWithItsOutcomeAndSteps runs each path and fault on
// DynamoDB Local with a recording SDK, and checks its call's span: one per
// call, its outcome, path, DynamoDB calls and status, and an event for
// each step, in order. Then it scans every span all of them recorded for
// the key, the scope, the body, the response, a header and the work's
// error text.
func TestEveryPathIsOneSpanWithItsOutcomeAndSteps(t *testing.T) {
	ctx := context.Background()
	do, atomic := "idem.Do", "idem.DoAtomic"
	t.Run("a first request on Do", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeExecuted, calls: 2,
			steps: []string{"idem.claim won", "idem.work ok", "idem.commit committed"}})
		if got := tr.last(t).attr("idem.status_code").AsInt64(); got != 201 {
			t.Errorf("idem.status_code = %d, want 201", got)
		}
	})
	t.Run("a first request on DoAtomic", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		if _, err := f.Store.DoAtomic(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		tr.last(t).check(t, want{name: atomic, outcome: idem.OutcomeExecuted, calls: 1,
			steps: []string{"idem.work ok", "idem.commit committed"}})
	})
	t.Run("a replay from the table", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		for range 2 {
			if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
				t.Fatal(err)
			}
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeReplayed, calls: 1, steps: []string{"idem.claim lost"}})
		if _, err := f.Store.DoAtomic(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		tr.last(t).check(t, want{name: atomic, outcome: idem.OutcomeReplayed, calls: 1, steps: []string{"idem.work ok", "idem.commit lost"}})
	})
	t.Run("a replay and a 422 from the cache", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt, withCache(10, 1<<20))
		for range 2 {
			if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
				t.Fatal(err)
			}
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeCacheHit, cacheHit: true})
		other := req(secretScope, secretKey, `{"card":"other"}`)
		if _, err := f.Store.DoAtomic(ctx, other, f.secretWork("o2")); !errors.Is(err, idem.ErrFingerprintMismatch) {
			t.Fatalf("err = %v, want the 422", err)
		}
		tr.last(t).check(t, want{name: atomic, outcome: idem.OutcomeMismatch, cacheHit: true})
	})
	t.Run("a 409, at once and after waiting", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		release := holdKey(t, f.Store, secretReq)
		defer release()
		if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("err = %v, want the 409", err)
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeInProgress, calls: 1, steps: []string{"idem.claim lost"}})
		waiting := f.NewStore(tr.opt, func(o *idem.Options) { o.Wait, o.PollInterval = 200*time.Millisecond, 50*time.Millisecond })
		if _, err := waiting.Do(ctx, secretReq, f.secretWork("o1")); !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("err = %v, want the 409 after the wait", err)
		}
		s := tr.last(t)
		polls := s.steps()[1:]
		if len(polls) == 0 || slices.ContainsFunc(polls, func(p string) bool { return p != "idem.poll in_progress" }) {
			t.Fatalf("steps = %q, want a poll that found it in progress each interval", s.steps())
		}
		s.check(t, want{name: do, outcome: idem.OutcomeInProgress, calls: int64(1 + len(polls)), steps: append([]string{"idem.claim lost"}, polls...)})
	})
	t.Run("a 422", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Store.Do(ctx, req(secretScope, secretKey, `{"card":"other"}`), f.secretWork("o2")); !errors.Is(err, idem.ErrFingerprintMismatch) {
			t.Fatalf("err = %v, want the 422", err)
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeMismatch, calls: 1, steps: []string{"idem.claim lost"}})
	})
	t.Run("a commit whose answer was lost, read back as its own", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		f.DB.AfterTx = resend(func(_ *fixture, in *dynamodb.TransactWriteItemsInput) { in.ClientRequestToken = nil },
			func(err error) bool { return errors.As(err, new(*types.TransactionCanceledException)) })(f)
		if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeExecuted, calls: 2,
			steps: []string{"idem.claim won", "idem.work ok", "idem.read_back commit", "idem.commit committed"}})
	})
	t.Run("a commit whose outcome is unknown, settled", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		f.DB.AfterTx = func(_ context.Context, _ *dynamodb.TransactWriteItemsInput, out *dynamodb.TransactWriteItemsOutput, err error) (*dynamodb.TransactWriteItemsOutput, error) {
			return nil, context.DeadlineExceeded // it landed
		}
		if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeExecuted, calls: 3,
			steps: []string{"idem.claim won", "idem.work ok", "idem.commit unknown", "idem.read_back commit", "idem.settle committed"}})
		f.DB.AfterTx = nil
		f.DB.Before = func(op string) error {
			if op == "TransactWriteItems" {
				return errors.New("connection reset") // it did not land
			}
			return nil
		}
		if _, err := f.Store.Do(ctx, req(secretScope, "SECRET-key-0002", secretBody), f.secretWork("o2")); err == nil {
			t.Fatal("the commit that did not land succeeded")
		}
		s := tr.last(t)
		if want := []string{"idem.claim won", "idem.work ok", "idem.commit unknown", "idem.settle lapsed", "exception *fmt.wrapError"}; !slices.Equal(s.steps(), want) {
			t.Errorf("steps = %q, want %q", s.steps(), want)
		}
		if s.attr("idem.outcome").AsString() != "lapsed" || s.Status().Code != codes.Error || s.attr("error.type").AsString() != "_OTHER" {
			t.Errorf("outcome %s, status %v, error.type %s; want lapsed, Error, _OTHER", s.attr("idem.outcome").AsString(), s.Status().Code, s.attr("error.type").AsString())
		}
	})
	t.Run("a claim whose answer was lost, read back as its own", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t)
		proxy, store := f.proxied(tr.opt)
		proxy.Inject(faultproxy.Fault{Op: "PutItem", Kind: faultproxy.CommitThenDrop})
		if _, err := store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		mustInject(t, proxy, faultproxy.CommitThenDrop, 1)
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeExecuted, calls: 2,
			steps: []string{"idem.read_back claim", "idem.claim won", "idem.work ok", "idem.commit committed"}})
	})
	t.Run("a claim with every answer lost, handed back", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t)
		proxy, store := f.proxied(tr.opt)
		proxy.Inject(faultproxy.Fault{Op: "PutItem", Kind: faultproxy.CommitThenDrop, Times: 3})
		if _, err := store.Do(ctx, secretReq, f.secretWork("o1")); err == nil {
			t.Fatal("the claim with every answer lost succeeded")
		}
		mustInject(t, proxy, faultproxy.CommitThenDrop, 3)
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeFailed, calls: 2, errType: "_OTHER",
			steps: []string{"idem.claim unknown", "idem.hand_back handed", "exception *fmt.wrapError"}})
	})
	t.Run("a claim with every send unanswered, whose hand-back finds another's record", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t)
		proxy, store := f.proxied(tr.opt)
		proxy.Inject(faultproxy.Fault{Op: "PutItem", Kind: faultproxy.ResetBefore, Times: 3, Reached: onTheLast(3, func() {
			// before the hand-back: another request claims the free key and completes
			if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
				t.Error(err)
			}
		})})
		if _, err := store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		mustInject(t, proxy, faultproxy.ResetBefore, 3)
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeReplayed, calls: 2,
			steps: []string{"idem.claim unknown", "idem.hand_back lost"}})
	})
	t.Run("a work error after the lease was taken over, whose lapse finds the taker's record", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		if _, err := f.Store.Do(ctx, secretReq, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			f.Clock.Advance(time.Hour) // the holder stalls past its lease; a retry takes the key over and completes
			if _, err := f.NewStore().Do(ctx, secretReq, f.secretWork("o1")); err != nil {
				t.Error(err)
			}
			return failingWithSecret(ctx, tx)
		}); err == nil {
			t.Fatal("the work's error was not returned")
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeLapsed, calls: 2, errType: "*errors.errorString",
			steps: []string{"idem.claim won", "idem.work error", "idem.lapse lost", "exception *errors.errorString"}})
	})
	t.Run("a commit with every send unanswered, whose settling lapse finds the taker's record", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t)
		proxy, store := f.proxied(tr.opt)
		proxy.Inject(faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.ResetBefore, Times: 3, Reached: onTheLast(3, func() {
			// before the settling lapse: the lease runs out, a retry takes the key over and completes
			f.Clock.Advance(time.Hour)
			if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
				t.Error(err)
			}
		})})
		if _, err := store.Do(ctx, secretReq, f.secretWork("o1")); !errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("err %v, want ErrLeaseLost: the commit never landed, the taker's did", err)
		}
		mustInject(t, proxy, faultproxy.ResetBefore, 3)
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeFenced, calls: 3, errType: "lease_lost",
			steps: []string{"idem.claim won", "idem.work ok", "idem.commit unknown", "idem.settle lost", "exception *errors.errorString"}})
	})
	t.Run("a takeover after a lapsed lease", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		if _, err := f.Store.Do(ctx, secretReq, failingWithSecret); err == nil {
			t.Fatal("the failing work succeeded")
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeLapsed, calls: 2, errType: "*errors.errorString",
			steps: []string{"idem.claim won", "idem.work error", "idem.lapse lapsed", "exception *errors.errorString"}})
		if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeExecuted, calls: 3, takeover: true,
			steps: []string{"idem.claim lost", "idem.takeover won", "idem.work ok", "idem.commit committed"}})
		if got := tr.last(t).Events()[1].Attributes; !slices.Contains(got, attribute.Int("idem.attempt", 2)) {
			t.Errorf("takeover event %v, want attempt 2", got)
		}
	})
	t.Run("DoAtomic takes over Do's lapsed lease", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		if _, err := f.Store.Do(ctx, secretReq, failingWithSecret); err == nil {
			t.Fatal("the failing work succeeded")
		}
		if _, err := f.Store.DoAtomic(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		s := tr.last(t)
		s.check(t, want{name: atomic, outcome: idem.OutcomeExecuted, calls: 2, takeover: true,
			steps: []string{"idem.work ok", "idem.commit lost", "idem.commit committed"}})
		if got := s.Events()[2].Attributes; !slices.Contains(got, attribute.Bool("idem.takeover", true)) {
			t.Errorf("the second commit's event %v, want takeover", got)
		}
	})
	t.Run("a takeover after an expired lease", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		crashAfterClaim(t, f, secretReq)
		f.Clock.Advance(11 * time.Second)
		if _, err := f.Store.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeExecuted, calls: 3, takeover: true,
			steps: []string{"idem.claim lost", "idem.takeover won", "idem.work ok", "idem.commit committed"}})
	})
	t.Run("a fenced holder", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt, func(o *idem.Options) { o.Lease = 10 * time.Second })
		stalled, resume, slow := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := f.Store.Do(ctx, secretReq, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				close(stalled)
				<-resume
				return f.secretWork("slow")(ctx, tx)
			})
			slow <- err
		}()
		<-stalled
		f.Clock.Advance(11 * time.Second)
		if _, err := f.NewStore().Do(ctx, secretReq, f.secretWork("taker")); err != nil {
			t.Fatal(err)
		}
		close(resume)
		if err := <-slow; !errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("slow holder: %v, want ErrLeaseLost", err)
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeFenced, calls: 2, errType: "lease_lost",
			steps: []string{"idem.claim won", "idem.work ok", "idem.commit lost", "exception *errors.errorString"}})
	})
	t.Run("a misconfigured table", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t)
		s, err := idem.New(f.DB, "no-such-table", tr.opt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Do(ctx, secretReq, f.secretWork("o1")); !errors.Is(err, idem.ErrMisconfigured) {
			t.Fatalf("err = %v, want ErrMisconfigured", err)
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeFailed, calls: 1, errType: "misconfigured",
			steps: []string{"idem.claim failed", "exception *fmt.wrapErrors"}})
		if _, err := s.DoAtomic(ctx, secretReq, f.secretWork("o1")); !errors.Is(err, idem.ErrMisconfigured) {
			t.Fatalf("err = %v, want ErrMisconfigured", err)
		}
		tr.last(t).check(t, want{name: atomic, outcome: idem.OutcomeFailed, calls: 2, errType: "misconfigured",
			steps: []string{"idem.work ok", "idem.commit unknown", "idem.hand_back failed", "idem.settle failed", "exception *fmt.wrapError"}})
	})
	// A work's error that carries a 4xx answer is an answer like a 409, no
	// span error; a ConflictFunc's final 5xx, never stored, is one, from 500
	// up.
	t.Run("a work's error carrying a 4xx answer", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		if _, err := f.Store.Do(ctx, secretReq, func(context.Context, *idem.Tx) (idem.Response, error) {
			return idem.Response{}, &answered{idem.Response{StatusCode: 400}}
		}); err == nil {
			t.Fatal("the work's error was not returned")
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeLapsed, calls: 2,
			steps: []string{"idem.claim won", "idem.work error", "idem.lapse lapsed"}})
	})
	t.Run("a ConflictFunc's 500", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		var prior idem.Tx
		prior.Add(f.OrderPut(secretScope, "o1", "existing"), nil)
		if _, err := f.Store.Commit(ctx, &prior); err != nil {
			t.Fatal(err)
		}
		fiveHundred := func(map[string]types.AttributeValue) (idem.Response, error) {
			return idem.Response{StatusCode: 500}, nil
		}
		if _, err := f.Store.Do(ctx, secretReq, func(_ context.Context, tx *idem.Tx) (idem.Response, error) {
			tx.Add(f.OrderPut(secretScope, "o1", "traced"), fiveHundred)
			return idem.Response{StatusCode: 201}, nil
		}); err == nil {
			t.Fatal("a ConflictFunc's 500 was answered as stored")
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeLapsed, calls: 3, errType: "_OTHER",
			steps: []string{"idem.claim won", "idem.work ok", "idem.conflict unstored", "idem.commit failed", "idem.lapse lapsed", "exception *idem.unstored"}})
	})
	t.Run("a panicking work", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		func() {
			defer func() {
				if recover() == nil {
					t.Error("Do did not re-raise the work's panic")
				}
			}()
			_, _ = f.Store.Do(ctx, secretReq, func(context.Context, *idem.Tx) (idem.Response, error) { panic(secretErr) }) // it panics: no answer
		}()
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeLapsed, calls: 2, errType: "panic",
			steps: []string{"idem.claim won", "idem.work panic", "idem.lapse lapsed"}})
	})
	t.Run("a business condition answered by its ConflictFunc", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		if _, err := f.Raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: &f.Business, Item: f.OrderPut(secretScope, "taken", "existing").Put.Item}); err != nil {
			t.Fatal(err)
		}
		res, err := f.Store.Do(ctx, secretReq, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			tx.Add(f.OrderPut(secretScope, "taken", "new"), func(map[string]types.AttributeValue) (idem.Response, error) {
				return idem.Response{StatusCode: 409, Body: []byte(secretResponse)}, nil
			})
			return idem.Response{StatusCode: 201}, nil
		})
		if err != nil || res.Response.StatusCode != 409 {
			t.Fatalf("got %+v, %v; want the ConflictFunc's 409", res, err)
		}
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeExecuted, calls: 3,
			steps: []string{"idem.claim won", "idem.work ok", "idem.conflict response", "idem.commit committed"}})
	})
	t.Run("a lapse whose answer was lost, read back as its own", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t)
		proxy, store := f.proxied(tr.opt)
		proxy.Inject(faultproxy.Fault{Op: "UpdateItem", Kind: faultproxy.CommitThenDrop})
		if _, err := store.Do(ctx, secretReq, failingWithSecret); err == nil {
			t.Fatal("the failing work succeeded")
		}
		mustInject(t, proxy, faultproxy.CommitThenDrop, 1)
		tr.last(t).check(t, want{name: do, outcome: idem.OutcomeLapsed, calls: 2, errType: "*errors.errorString",
			steps: []string{"idem.claim won", "idem.work error", "idem.read_back lapse", "idem.lapse lapsed", "exception *errors.errorString"}})
	})
	t.Run("DoAtomic's commit whose outcome is unknown, handed back", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t, tr.opt)
		f.DB.Before = func(op string) error {
			if op == "TransactWriteItems" {
				return errors.New("connection reset")
			}
			return nil
		}
		if _, err := f.Store.DoAtomic(ctx, secretReq, f.secretWork("o1")); err == nil {
			t.Fatal("the commit that did not land succeeded")
		}
		tr.last(t).check(t, want{name: atomic, outcome: idem.OutcomeFailed, calls: 2, errType: "_OTHER",
			steps: []string{"idem.work ok", "idem.commit unknown", "idem.hand_back handed", "idem.settle handed_back", "exception *fmt.wrapError"}})
	})
	t.Run("the DynamoDB calls are the span's children", func(t *testing.T) {
		tr := newTracer(t)
		f := newFixture(t)
		spy := &contextSpy{DynamoDBAPI: f.DB}
		s, err := idem.New(spy, f.Table, tr.opt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Do(ctx, secretReq, f.secretWork("o1")); err != nil {
			t.Fatal(err)
		}
		id := tr.last(t).SpanContext().SpanID()
		if len(spy.parents) != 2 || spy.parents[0].SpanID() != id || spy.parents[1].SpanID() != id {
			t.Fatalf("the DynamoDB calls' spans in context: %v, want the call's span %v for both", spy.parents, id)
		}
	})
	t.Run("no span carries the key, the scope, the body or the response", func(t *testing.T) {
		recorded.Lock()
		defer recorded.Unlock()
		if len(recorded.spans) < 20 {
			t.Fatalf("%d spans recorded: the paths above did not run", len(recorded.spans))
		}
		for _, s := range recorded.spans {
			if leak := secretIn(s); leak != "" {
				t.Errorf("span %s carries %s", s.Name(), leak)
			}
		}
	})
}

// secretIn names what of the secrets s carries in its name, attributes,
// events or status, or "".
func secretIn(s sdktrace.ReadOnlySpan) string {
	texts := []string{s.Name(), s.Status().Description}
	kvs := s.Attributes()
	for _, e := range s.Events() {
		texts = append(texts, e.Name)
		kvs = append(kvs, e.Attributes...)
	}
	for _, kv := range kvs {
		texts = append(texts, string(kv.Key), kv.Value.String())
	}
	for _, text := range texts {
		for _, secret := range []string{secretScope, secretKey, secretBody, "SECRET"} {
			if strings.Contains(text, secret) {
				return fmt.Sprintf("%q in %q", secret, text)
			}
		}
	}
	return ""
}

// contextSpy keeps the span each write's context carries: the parent an
// instrumented client (otelaws) gives the call's own span.
type contextSpy struct {
	idem.DynamoDBAPI
	parents []trace.SpanContext
}

func (c *contextSpy) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.parents = append(c.parents, trace.SpanContextFromContext(ctx))
	return c.DynamoDBAPI.PutItem(ctx, in, o...)
}

func (c *contextSpy) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.parents = append(c.parents, trace.SpanContextFromContext(ctx))
	return c.DynamoDBAPI.TransactWriteItems(ctx, in, o...)
}

// A call's log lines name its trace, where it has one that records: from a
// line to the call's span. Untraced, they are as they were.
func TestLogLinesOfATracedCallNameItsTrace(t *testing.T) {
	tr := newTracer(t)
	var traced, plain bytes.Buffer
	f := newFixture(t, tr.opt, func(o *idem.Options) { o.Logger = slog.New(slog.NewJSONHandler(&traced, nil)) })
	if _, err := f.Store.Do(context.Background(), secretReq, f.secretWork("o1")); err != nil {
		t.Fatal(err)
	}
	want := tr.last(t).SpanContext().TraceID().String()
	if !strings.Contains(traced.String(), `"trace_id":"`+want+`"`) {
		t.Fatalf("log %s, want trace_id %s", traced.String(), want)
	}
	s := f.NewStore(func(o *idem.Options) { o.Logger = slog.New(slog.NewJSONHandler(&plain, nil)) })
	if _, err := s.Do(context.Background(), secretReq, f.secretWork("o1")); err != nil {
		t.Fatal(err)
	}
	if plain.Len() == 0 || strings.Contains(plain.String(), "trace_id") {
		t.Fatalf("untraced log %q, want a line without trace_id", plain.String())
	}
}

// rootsOnly samples a span without a parent and drops every other: an
// inner call under a recorded one records nothing.
type rootsOnly struct{}

func (rootsOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if trace.SpanContextFromContext(p.ParentContext).IsValid() {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
}
func (rootsOnly) Description() string { return "roots only" }

// A work that calls its Store again makes a call of its own, whose
// DynamoDB calls and steps are never the outer call's, even where its span
// records nothing while the outer's does.
func TestANestedCallIsNeverCountedAsTheOuter(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(rootsOnly{}), sdktrace.WithSpanProcessor(rec))
	f := newFixture(t, func(o *idem.Options) { o.TracerProvider = tp })
	ctx := context.Background()
	_, err := f.Store.Do(ctx, secretReq, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		if _, err := f.Store.Do(ctx, req(secretScope, "inner-key", `{}`), f.secretWork("inner")); err != nil {
			return idem.Response{}, err
		}
		return idem.Response{StatusCode: 201}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ended := rec.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans recorded, want the outer call's alone", len(ended))
	}
	s := span{ended[0]}
	if got := s.attr("idem.dynamodb.calls").AsInt64(); got != 2 {
		t.Errorf("the outer call counts %d DynamoDB calls, want its own 2", got)
	}
	if want := []string{"idem.claim won", "idem.work ok", "idem.commit committed"}; !slices.Equal(s.steps(), want) {
		t.Errorf("the outer call's steps %q, want %q", s.steps(), want)
	}
}
