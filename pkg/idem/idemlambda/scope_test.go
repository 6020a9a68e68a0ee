package idemlambda_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// TestTheCacheKeepsConsumersApart: a consumer's scope is its name, and the
// cache answers for the consumer and the event's id together, never the
// id alone: consumer bob's delivery of message k1 with the body consumer
// alice processed, and carol's with another body, each run their own
// handler (never skipped as processed, never failed as a mismatch); the
// same after a Delete and after the records expired (testbed.ScopePlan).
func TestTheCacheKeepsConsumersApart(t *testing.T) {
	cached := func(o *idem.Options) { o.Cache = idem.CacheOptions{MaxEntries: 10, MaxBytes: 1 << 16} }
	t.Run("SQS", func(t *testing.T) {
		f := newFixture(t, cached)
		var plan testbed.ScopePlan
		plan.Run(f, func(scope, body string) (string, error) {
			h := idemlambda.SQS(f.Store, func(ctx context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error {
				plan.Work(ev.Scope)
				return nil
			}, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = scope })
			resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("k1", body)}})
			if err == nil && len(resp.BatchItemFailures) != 0 {
				err = fmt.Errorf("failures %v", failedIDs(resp))
			}
			return "", err
		})
	})
	t.Run("EventBridge", func(t *testing.T) {
		f := newFixture(t, cached)
		var plan testbed.ScopePlan
		plan.Run(f, func(scope, body string) (string, error) {
			h := idemlambda.EventBridge(f.Store, func(ctx context.Context, ev idemlambda.Event[events.CloudWatchEvent], tx *idem.Tx) error {
				plan.Work(ev.Scope)
				return nil
			}, func(o *idemlambda.ConsumerOptions[events.CloudWatchEvent]) { o.Scope = scope })
			return "", h(context.Background(), events.CloudWatchEvent{ID: "k1", Source: "orders", DetailType: "OrderCreated", Detail: []byte(body)})
		})
	})
}

// TestALBAnswers401ToAnIdentityThatIsNotUTF8: an identity header in
// Latin-1 ("m\xfcller", "m\xf6ller", which DynamoDB's SDK would write
// alike, as "m\uFFFDller") cannot be a scope: each request is 401 before
// any DynamoDB call, and the handler never runs.
func TestALBAnswers401ToAnIdentityThatIsNotUTF8(t *testing.T) {
	f := newFixture(t)
	runs := 0
	h := idemlambda.ALB(f.Store, nil, func(ctx context.Context, req idemlambda.Request[events.ALBTargetGroupRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
		runs++
		return idem.Response{StatusCode: 201}, nil
	}, func(o *idemlambda.Options[events.ALBTargetGroupRequest]) { o.Scope = idemlambda.ALBOIDCIdentity })
	for _, user := range []string{"m\xfcller", "m\xf6ller"} {
		r, err := h(context.Background(), testbed.ALBRequest(user, map[string]string{"idempotency-key": "k1"}, `{}`))
		if err != nil || r.StatusCode != 401 || !strings.Contains(r.Body, `"code":"unauthenticated"`) {
			t.Fatalf("%q: %d %s %v, want 401 unauthenticated", user, r.StatusCode, r.Body, err)
		}
	}
	if runs != 0 || f.DB.Total() != 0 {
		t.Fatalf("the handler ran %d times, DynamoDB calls %v; want none", runs, f.DB.Calls())
	}
	if r, _ := h(context.Background(), testbed.ALBRequest("müller", map[string]string{"idempotency-key": "k1"}, `{}`)); r.StatusCode != 201 || runs != 1 {
		t.Fatalf("the name in UTF-8: %d after %d runs, want 201", r.StatusCode, runs)
	}
}

// TestAConsumerNamedInInvalidUTF8IsRefusedWhenBuilt: a consumer's scope
// that is not valid UTF-8 would share its keys with every other name of
// its length that differs only in such bytes (DynamoDB's SDK writes each
// as U+FFFD): it is an option out of range, a panic with
// ErrInvalidOptions when the consumer is built, on every consumer.
func TestAConsumerNamedInInvalidUTF8IsRefusedWhenBuilt(t *testing.T) {
	s := newFixture(t).Store
	const latin1 = "m\xfcller"
	builds := map[string]func(){
		"SQS": func() {
			idemlambda.SQS(s, func(context.Context, idemlambda.Event[events.SQSMessage], *idem.Tx) error { return nil },
				func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = latin1 })
		},
		"EventBridge": func() {
			idemlambda.EventBridge(s, func(context.Context, idemlambda.Event[events.CloudWatchEvent], *idem.Tx) error { return nil },
				func(o *idemlambda.ConsumerOptions[events.CloudWatchEvent]) { o.Scope = latin1 })
		},
		"Function": func() {
			idemlambda.Function(s, func(context.Context, idemlambda.Event[string], *idem.Tx) (string, error) { return "", nil },
				func(o *idemlambda.ConsumerOptions[string]) {
					o.Scope, o.Key = latin1, func(s *string) (string, error) { return *s, nil }
				})
		},
	}
	for name, build := range builds {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if err, _ := recover().(error); !errors.Is(err, idem.ErrInvalidOptions) {
					t.Fatalf("built with scope %q: %v, want a panic with ErrInvalidOptions", latin1, err)
				}
			}()
			build()
		})
	}
	// The same name in UTF-8 is a consumer like any other.
	idemlambda.SQS(s, func(context.Context, idemlambda.Event[events.SQSMessage], *idem.Tx) error { return nil },
		func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = "müller" })
}
