package idemlambda

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
)

// EventBridge wraps h for an EventBridge-triggered Lambda: each event is
// processed once per id, its writes committed with its processed marker.
// A duplicate delivery returns nil; a failure (a panic in h included)
// returns the error, so that Lambda retries the event. It panics without
// ConsumerOptions.Scope.
func EventBridge(s Doer, h EventHandler[events.CloudWatchEvent], optFns ...func(*ConsumerOptions[events.CloudWatchEvent])) func(context.Context, events.CloudWatchEvent) error {
	c := newConsumer("EventBridge", optFns)
	c.kind = "EVENT"
	if c.Key == nil {
		c.Key = func(ev *events.CloudWatchEvent) (string, error) { return ev.ID, nil }
	}
	c.raw = func(ev *events.CloudWatchEvent) (string, []byte) { return ev.Source + "/" + ev.DetailType, ev.Detail }
	return func(ctx context.Context, ev events.CloudWatchEvent) error {
		err := c.process(ctx, s, &ev, h)
		if errors.Is(err, idem.ErrInProgress) {
			return fmt.Errorf("event %s is being processed by another delivery: %w", ev.ID, err)
		}
		if err != nil {
			c.Logger.Warn("idem: event failed", "event_id", ev.ID, "error", err.Error())
		}
		return err
	}
}
