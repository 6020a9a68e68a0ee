package idemlambda

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"unicode/utf8"

	"github.com/idemkeys/idem/pkg/idem"
)

// Event is what a consumer's handler gets: one event (an SQS message, an
// EventBridge event, a function's input), the consumer's scope and the
// event's id, its key.
type Event[E any] struct {
	Event      *E
	Scope, Key string
}

// EventHandler is every consumer's handler (SQS, EventBridge): it adds the
// event's writes to tx, which commit with its processed marker. An error,
// or a panic, leaves the event unprocessed, to be delivered again; a panic
// fails its own event only, as an error carrying the panic's value and
// stack.
//
// A write added with an idem.ConflictFunc whose condition fails makes the
// function's idem.Response the event's outcome, stored without any of the
// event's writes: the event counts as processed, and its redeliveries are
// skipped. The consumer reads nothing of that Response but its status: a
// 5xx, like an error from the function, leaves the event unprocessed, to
// be delivered again.
type EventHandler[E any] func(ctx context.Context, ev Event[E], tx *idem.Tx) error

// ConsumerOptions configure SQS, EventBridge, Kinesis, DynamoDBStream and
// Function. The zero value
// of each field means its default.
type ConsumerOptions[E any] struct {
	// Scope names the consumer: its keys are its own, so two consumers of
	// one event each process it once. Required: 1 to idem.MaxScopeLength
	// bytes of valid UTF-8 (DynamoDB's SDK would write an invalid byte as
	// U+FFFD, and two such names would share their keys).
	Scope string
	// Key reads the event's id, its idempotency key. The default is SQS's
	// messageId, EventBridge's id and a stream record's eventID (on
	// Kinesis, read the producer's id instead: see Kinesis); Function has
	// none and requires it.
	// SQSAttribute reads a producer's id from a message attribute.
	Key func(ev *E) (string, error)
	// Fingerprint chooses what of the event makes two events with one id
	// the same event, hashed as JSON (idem.FingerprintValue: map keys
	// that differ only in case are two keys). The default is an SQS
	// message's body, an EventBridge event's source, detail type and
	// detail, a Kinesis record's data, a DynamoDB stream record's event
	// name and change, a function's whole input.
	Fingerprint func(ev *E) any
	// Atomic runs the handler with DoAtomic instead of Do.
	Atomic bool
	// PassThrough (Function only) runs the handler without idempotency for
	// an input whose key is "", instead of failing with ErrNoKey; its
	// writes to tx commit alone, in one transaction (idem.Store.Commit:
	// Function panics when built with PassThrough on a Doer without it).
	PassThrough bool
	// FailGroupOnly (SQS only): on a FIFO queue, a failure fails the later
	// messages of its own message group only, as Powertools' FIFO
	// processor can, and the other groups' messages are processed, each
	// group still in order. By default it fails every later message.
	FailGroupOnly bool
	// Logger receives a line for each event that failed, on SQS,
	// EventBridge and the stream doors (default: none); Function returns
	// its errors instead.
	Logger *slog.Logger
}

// ErrNoKey is returned by Function's handler for an input whose Key is "".
var ErrNoKey = errors.New("idem: event has no idempotency key")

// consumer is a checked ConsumerOptions.
type consumer[E any] struct {
	ConsumerOptions[E]
	kind string                                  // the fingerprint's method: "SQS", "EVENT", "FUNCTION"
	raw  func(ev *E) (route string, body []byte) // the door's own fingerprint, of bytes
}

// newConsumer applies optFns and checks them: an option missing or out of
// range panics here, with an error that matches idem.ErrInvalidOptions, as
// every door does.
func newConsumer[E any](door string, optFns []func(*ConsumerOptions[E])) *consumer[E] {
	c := &consumer[E]{}
	for _, fn := range optFns {
		fn(&c.ConsumerOptions)
	}
	if c.Scope == "" || len(c.Scope) > idem.MaxScopeLength || !utf8.ValidString(c.Scope) {
		panic(fmt.Errorf("%w: %s: ConsumerOptions.Scope names the consumer (1 to %d bytes of UTF-8)", idem.ErrInvalidOptions, door, idem.MaxScopeLength))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// process runs h once for ev under its id, as every consumer does.
func (c *consumer[E]) process(ctx context.Context, s Doer, ev *E, h EventHandler[E]) error {
	var key, fp string
	err := contained(func() (err error) { // the options' functions are the user's code too
		if key, err = c.Key(ev); err != nil {
			return err
		}
		if key == "" {
			return ErrNoKey
		}
		fp, err = c.fingerprint(ev)
		return err
	})
	if err != nil {
		return err
	}
	do := s.Do
	if c.Atomic {
		do = s.DoAtomic
	}
	_, err = do(ctx, idem.Request{Scope: c.Scope, Key: key, Fingerprint: fp}, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		if err := contained(func() error { return h(ctx, Event[E]{Event: ev, Scope: c.Scope, Key: key}, tx) }); err != nil {
			return idem.Response{}, err
		}
		return idem.Response{StatusCode: http.StatusOK}, nil
	})
	// A replay is an event processed before: success. In progress means
	// another delivery of it is being processed now: retry it later.
	return err
}

// logFailure logs an event (a "message", an "event") that failed, to be
// delivered again. One whose id was processed with another body fails on
// every delivery: its line says so, for the operator who finds it in the
// dead-letter queue.
func (c *consumer[E]) logFailure(what, id string, err error) {
	msg := "idem: " + what + " failed"
	if errors.Is(err, idem.ErrFingerprintMismatch) {
		msg = "idem: " + what + " refused: its id was processed with another body, which every delivery of it meets"
	}
	c.Logger.Warn(msg, what+"_id", id, "error", err.Error())
}

// fingerprint is the event's digest: the door's own, or the option's
// choice as JSON. The same id with another body is not a redelivery: it is
// refused (to the dead-letter queue, in time) rather than skipped unseen.
func (c *consumer[E]) fingerprint(ev *E) (string, error) {
	if c.Fingerprint != nil {
		return idem.FingerprintValue(c.kind, c.Scope, c.Fingerprint(ev))
	}
	route, body := c.raw(ev)
	return idem.Fingerprint(c.kind, route, body, false)
}

// contained runs h, turning a panic into an error with the panic's value
// and stack: a panicking event fails alone instead of taking its batch
// down with it, and the Do around it lapses its lease as for any error.
func contained(h func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("idem: the handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return h()
}

func idemOptionsError(what string) error { return fmt.Errorf("%w: %s", idem.ErrInvalidOptions, what) }
