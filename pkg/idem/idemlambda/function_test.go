package idemlambda_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// items counts the records in the idempotency table.
func items(f *testbed.Fixture) int {
	f.T.Helper()
	out, err := f.Raw.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(f.Table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		f.T.Fatal(err)
	}
	return int(out.Count)
}

// shipTask is a Step Functions task's input: the state machine passes the
// execution's id and the order; a retry of the state sends the same input.
type shipTask struct {
	ExecutionID string `json:"execution_id"`
	OrderID     string `json:"order_id"`
	Items       int    `json:"items"`
	Attempt     int    `json:"attempt"` // changes on every retry: not part of the request
}

type shipped struct {
	TrackingID string `json:"tracking_id"`
	Items      int    `json:"items"`
}

func TestFunctionRunsATypedTaskOnce(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	ship := idemlambda.Function(f.Store, func(ctx context.Context, ev idemlambda.Event[shipTask], tx *idem.Tx) (shipped, error) {
		in := *ev.Event
		n := runs.Add(1)
		tx.Add(f.OrderPut("shipper", in.OrderID, "shipped"), nil)
		return shipped{TrackingID: "trk-" + in.OrderID + "-" + string(rune('0'+n)), Items: in.Items}, nil
	}, func(o *idemlambda.ConsumerOptions[shipTask]) {
		o.Scope = "shipper"
		o.Key = func(in *shipTask) (string, error) { return in.ExecutionID, nil }
		o.Fingerprint = func(in *shipTask) any { return []any{in.OrderID, in.Items} }
	})
	ctx := context.Background()
	first, err := ship(ctx, shipTask{"exec-1", "o-1", 3, 1})
	if err != nil || first.TrackingID != "trk-o-1-1" || first.Items != 3 || f.Order("shipper", "o-1") == nil {
		t.Fatalf("first = %+v %v", first, err)
	}
	again, err := ship(ctx, shipTask{"exec-1", "o-1", 3, 2}) // a retried state: Attempt is outside the fingerprint
	if err != nil || again != first || runs.Load() != 1 {
		t.Fatalf("replay = %+v %v after %d runs, want the first Out decoded", again, err, runs.Load())
	}
	if _, err := ship(ctx, shipTask{"exec-1", "o-2", 3, 1}); !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("another order under the execution id: %v, want ErrFingerprintMismatch", err)
	}
	before := items(f)
	if _, err := ship(ctx, shipTask{"", "o-3", 1, 1}); !errors.Is(err, idemlambda.ErrNoKey) || runs.Load() != 1 || items(f) != before {
		t.Fatalf("no key: %v, %d runs, want ErrNoKey and nothing run or written", err, runs.Load())
	}
}

func TestFunctionPassThroughAndOptions(t *testing.T) {
	f := newFixture(t)
	echo := func(ctx context.Context, ev idemlambda.Event[shipTask], tx *idem.Tx) (shipped, error) {
		in := *ev.Event
		return shipped{TrackingID: "direct", Items: in.Items}, nil
	}
	h := idemlambda.Function(f.Store, echo, func(o *idemlambda.ConsumerOptions[shipTask]) {
		o.Scope, o.PassThrough = "shipper", true
		o.Key = func(in *shipTask) (string, error) { return in.ExecutionID, nil }
	})
	if out, err := h(context.Background(), shipTask{Items: 2}); err != nil || out.TrackingID != "direct" || items(f) != 0 {
		t.Fatalf("pass-through = %+v %v with %d records", out, err, items(f))
	}
}

// TestFunctionPassThroughCommitsTheHandlersWrites: one handler serves both
// cases. With PassThrough, a keyless event runs the handler with a usable
// Tx whose writes commit in one transaction without an idempotency record,
// and its result is returned.
func TestFunctionPassThroughCommitsTheHandlersWrites(t *testing.T) {
	f := newFixture(t)
	ship := idemlambda.Function(f.Store, func(ctx context.Context, ev idemlambda.Event[shipTask], tx *idem.Tx) (shipped, error) {
		in := *ev.Event
		tx.Add(f.OrderPut("shipper", in.OrderID, "shipped"), nil)
		tx.Add(f.OrderPut("shipper", in.OrderID+"-label", "label"), nil)
		return shipped{TrackingID: "trk-" + in.OrderID, Items: in.Items}, nil
	}, func(o *idemlambda.ConsumerOptions[shipTask]) {
		o.Scope, o.PassThrough = "shipper", true
		o.Key = func(in *shipTask) (string, error) { return in.ExecutionID, nil }
	})
	var out shipped
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("pass-through panicked: %v", p)
			}
		}()
		out, err = ship(context.Background(), shipTask{OrderID: "o-9", Items: 2})
	}()
	if err != nil || out.TrackingID != "trk-o-9" || f.Order("shipper", "o-9") == nil || f.Order("shipper", "o-9-label") == nil {
		t.Fatalf("pass-through = %+v, %v; want the result and both writes committed", out, err)
	}
	if items(f) != 0 {
		t.Fatalf("pass-through wrote %d idempotency records, want none", items(f))
	}
	// Its writes are one transaction: a failed condition commits neither.
	if _, err := ship(context.Background(), shipTask{OrderID: "o-9", Items: 2}); !errors.Is(err, idem.ErrWriteConditionFailed) {
		t.Fatalf("the same writes again: %v, want ErrWriteConditionFailed", err)
	}
}

// conflictShipper is Function with PassThrough whose write of the order
// meets o-1, which an earlier operation made: its ConflictFunc answers
// conflict (a status and a tracking id); with many set, it adds 101 writes.
func conflictShipper(t *testing.T, f *testbed.Fixture, status int, many *bool) func(context.Context, shipTask) (shipped, error) {
	t.Helper()
	if _, err := f.Store.Do(context.Background(), testbed.Req("pre", "k", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(f.OrderPut("shipper", "o-1", "first"), nil)
		return idem.Response{StatusCode: 201}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return idemlambda.Function(f.Store, func(ctx context.Context, ev idemlambda.Event[shipTask], tx *idem.Tx) (shipped, error) {
		if *many {
			for i := range 101 {
				tx.Add(f.OrderPut("shipper", "m"+strings.Repeat("x", i), "n"), nil)
			}
			return shipped{}, nil
		}
		tx.Add(f.OrderPut("shipper", ev.Event.OrderID, "again"), func(map[string]types.AttributeValue) (idem.Response, error) {
			return idem.Response{StatusCode: status, Body: []byte(`{"tracking_id":"already"}`)}, nil
		})
		return shipped{TrackingID: "new"}, nil
	}, func(o *idemlambda.ConsumerOptions[shipTask]) {
		o.Scope, o.PassThrough = "shipper", true
		o.Key = func(in *shipTask) (string, error) { return in.ExecutionID, nil }
	})
}

// TestFunctionPassThroughAnswersAsTheKeyedPath: one handler, one behaviour.
// A write whose condition fails with a ConflictFunc gives the conflict's Out
// with and without a key; 101 writes are ErrTooManyWrites before any write
// on the pass-through path too.
func TestFunctionPassThroughAnswersAsTheKeyedPath(t *testing.T) {
	f := newFixture(t)
	many := false
	ship := conflictShipper(t, f, 200, &many)
	keyed, kerr := ship(context.Background(), shipTask{ExecutionID: "e1", OrderID: "o-1"})
	free, ferr := ship(context.Background(), shipTask{OrderID: "o-1"})
	if kerr != nil || ferr != nil || keyed.TrackingID != "already" || free != keyed {
		t.Fatalf("keyed %+v %v, pass-through %+v %v; want the conflict's answer both ways", keyed, kerr, free, ferr)
	}
	many = true
	before := f.DB.Total()
	if _, err := ship(context.Background(), shipTask{OrderID: "o-2"}); !errors.Is(err, idem.ErrTooManyWrites) || f.DB.Total() != before {
		t.Fatalf("101 writes without a key: %v after %d calls; want ErrTooManyWrites before any", err, f.DB.Total()-before)
	}
}

// TestFunctionPassThroughConflict5xxIsAnError: a ConflictFunc's 5xx is no
// answer on either path: the keyed call and the keyless one both fail.
func TestFunctionPassThroughConflict5xxIsAnError(t *testing.T) {
	many := false
	ship := conflictShipper(t, newFixture(t), 503, &many)
	keyed, kerr := ship(context.Background(), shipTask{ExecutionID: "e1", OrderID: "o-1"})
	free, ferr := ship(context.Background(), shipTask{OrderID: "o-1"})
	if kerr == nil || ferr == nil {
		t.Fatalf("keyed %+v %v, pass-through %+v %v; want both to fail", keyed, kerr, free, ferr)
	}
}

// TestFunctionAnswersAConcurrentRepeatInProgress: a repeat while the first
// call runs fails with idem.ErrInProgress, and runs nothing.
func TestFunctionAnswersAConcurrentRepeatInProgress(t *testing.T) {
	f := newFixture(t)
	held, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	ship := idemlambda.Function(f.Store, func(ctx context.Context, ev idemlambda.Event[shipTask], tx *idem.Tx) (shipped, error) {
		if runs.Add(1) == 1 {
			close(held)
			<-release
		}
		return shipped{TrackingID: "t"}, nil
	}, func(o *idemlambda.ConsumerOptions[shipTask]) {
		o.Scope = "shipper"
		o.Key = func(in *shipTask) (string, error) { return in.ExecutionID, nil }
	})
	done := make(chan error)
	go func() { _, err := ship(context.Background(), shipTask{ExecutionID: "e1"}); done <- err }()
	<-held
	_, err := ship(context.Background(), shipTask{ExecutionID: "e1"})
	close(release)
	if first := <-done; first != nil || !errors.Is(err, idem.ErrInProgress) || runs.Load() != 1 {
		t.Fatalf("first %v, concurrent %v after %d runs; want ErrInProgress and one run", first, err, runs.Load())
	}
}
