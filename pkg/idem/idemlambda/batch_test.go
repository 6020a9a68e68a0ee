package idemlambda_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// TestABatchIsProcessedInOrderAndACopyInItOnce: SQS's doc says a batch's
// messages are processed one after another, in the batch's order, and a
// message delivered twice in one batch (at-least-once delivery does that)
// takes effect once, its second copy skipped as a duplicate, with no
// failure reported for either.
func TestABatchIsProcessedInOrderAndACopyInItOnce(t *testing.T) {
	for _, atomic := range []bool{false, true} {
		t.Run(map[bool]string{false: "Do", true: "Atomic"}[atomic], func(t *testing.T) {
			f := testbed.New(t)
			var ran []string
			handle := idemlambda.SQS(f.NewStore(), func(ctx context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error {
				ran = append(ran, ev.Key)
				tx.Add(count(f, ev.Event.Body), nil)
				return nil
			}, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope, o.Atomic = "projector", atomic })
			batch := []events.SQSMessage{message("m-1", "order-1"), message("m-2", "order-2"), message("m-1", "order-1"), message("m-3", "order-3")}
			resp, err := handle(context.Background(), events.SQSEvent{Records: batch})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("%v, failures %v: want none", err, failedIDs(resp))
			}
			want := []string{"m-1", "m-2", "m-3"}
			if atomic {
				want = []string{"m-1", "m-2", "m-1", "m-3"} // DoAtomic runs a duplicate's work too; its commit is refused
			}
			if !slices.Equal(ran, want) {
				t.Errorf("the handler ran for %v, want %v, in the batch's order", ran, want)
			}
			for _, o := range []string{"order-1", "order-2", "order-3"} {
				if got := times(f, o); got != 1 {
					t.Errorf("%s took effect %d times, want 1", o, got)
				}
			}
		})
	}
}
