package idemlambda

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
)

// EventBridge wraps h for an EventBridge-triggered Lambda: each event is
// processed once per id, its writes committed with its processed marker.
// A duplicate delivery returns nil; a failure (a panic in h included)
// returns the error, so that Lambda retries the event. It panics without
// ConsumerOptions.Scope.
//
// An event whose id another delivery holds returns an error that matches
// idem.ErrInProgress: the holder may still fail, and the retry then takes
// effect. An event whose id was processed with another source, detail type
// or detail returns idem.ErrFingerprintMismatch, with a WARN line, on every
// retry. Either way, once Lambda's retries of an asynchronous invocation
// are spent (two by default, one and two minutes apart), the event goes to
// the function's on-failure destination or dead-letter queue: configure
// one, or an event still held then is dropped.
func EventBridge(s Doer, h EventHandler[events.CloudWatchEvent], optFns ...func(*ConsumerOptions[events.CloudWatchEvent])) func(context.Context, events.CloudWatchEvent) error {
	c := newConsumer("EventBridge", optFns)
	c.kind = "EVENT"
	if c.Key == nil {
		c.Key = func(ev *events.CloudWatchEvent) (string, error) { return ev.ID, nil }
	}
	c.raw = func(ev *events.CloudWatchEvent) (string, []byte) {
		return eventRoute(ev.Source, ev.DetailType), ev.Detail
	}
	return func(ctx context.Context, ev events.CloudWatchEvent) error {
		err := c.process(ctx, s, &ev, h)
		if errors.Is(err, idem.ErrInProgress) {
			return fmt.Errorf("event %s is being processed by another delivery: %w", ev.ID, err)
		}
		if err != nil {
			c.logFailure("event", ev.ID, err)
		}
		return err
	}
}

// eventRoute is an event's source and detail type as one route, split at
// its first '/': either may hold a '/' ("shop/orders" and "Placed", "shop"
// and "orders/Placed"), so the source's own '%' and '/' are escaped, as a
// URL escapes them. A source with neither, as AWS's own and most are, is
// written as it is, so that its events' fingerprints stay what they were.
func eventRoute(source, detailType string) string {
	if strings.ContainsAny(source, "%/") {
		source = strings.NewReplacer("%", "%25", "/", "%2F").Replace(source)
	}
	return source + "/" + detailType
}
