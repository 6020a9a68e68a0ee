package idemlambda_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// tagged is an input with AWS tags, whose keys are case-sensitive: "Env"
// and "env" are two tags.
type tagged struct {
	ID   string            `json:"id"`
	Tags map[string]string `json:"tags"`
}

// Function takes an input whose map keys differ only in case, runs it once
// and replays it, and tells it from the input with the values swapped: the
// JSON it fingerprints is its own encoding of the decoded input, which
// holds no duplicate to refuse.
func TestFunctionTakesMapKeysThatDifferOnlyInCase(t *testing.T) {
	s := idemtest.NewStore(t)
	runs := 0
	fn := idemlambda.Function(s, func(_ context.Context, ev idemlambda.Event[tagged], _ *idem.Tx) (string, error) {
		runs++
		return ev.Event.Tags["Env"] + "/" + ev.Event.Tags["env"], nil
	}, func(o *idemlambda.ConsumerOptions[tagged]) {
		o.Scope = "tagger"
		o.Key = func(in *tagged) (string, error) { return in.ID, nil }
	})
	in := tagged{ID: "t1", Tags: map[string]string{"Env": "prod", "env": "dev"}}
	for range 2 {
		if out, err := fn(context.Background(), in); err != nil || out != "prod/dev" || runs != 1 {
			t.Fatalf("Function: %q, %v after %d runs; want prod/dev, run once", out, err, runs)
		}
	}
	swapped := tagged{ID: "t1", Tags: map[string]string{"Env": "dev", "env": "prod"}}
	if _, err := fn(context.Background(), swapped); !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("the swapped input under one key: %v, want ErrFingerprintMismatch", err)
	}
}

// A consumer's own Fingerprint option may choose a map whose keys differ
// only in case: the message is processed, not refused.
func TestAConsumersFingerprintTakesMapKeysThatDifferOnlyInCase(t *testing.T) {
	s := idemtest.NewStore(t)
	runs := 0
	handle := idemlambda.SQS(s, func(context.Context, idemlambda.Event[events.SQSMessage], *idem.Tx) error {
		runs++
		return nil
	}, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) {
		o.Scope = "tagger"
		o.Fingerprint = func(m *events.SQSMessage) any { return map[string]string{"Env": m.Body, "env": "dev"} }
	})
	resp, err := handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: "prod"}}})
	if err != nil || len(resp.BatchItemFailures) != 0 || runs != 1 {
		t.Fatalf("SQS: %+v, %v after %d runs; want the message processed", resp, err, runs)
	}
}
