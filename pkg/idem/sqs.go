package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// MessageHandler processes one message, adding its writes to tx so that
// they commit with the processed marker. An error, or a panic, leaves the
// message unprocessed, to be delivered again; a panic fails its own
// message only, as an error carrying the panic's value and stack.
type MessageHandler func(ctx context.Context, msg events.SQSMessage, tx *Tx) error

// SQSOptions configure Store.SQS.
type SQSOptions struct {
	// Scope names the consumer: its processed markers are its own, so two
	// consumers of one message each process it once. Required.
	Scope string
	// IDAttribute, when set, names the message attribute (a String) that
	// holds the producer's event id. SQS keeps a messageId across
	// redeliveries of one message, but a producer that sends an event twice
	// (a retried send) makes two messages of it: only the producer's id
	// says they are the same event.
	IDAttribute string
	// Key, when set, derives the event id from the message itself (from
	// the body, say). It takes precedence over IDAttribute.
	Key func(msg events.SQSMessage) (string, error)
	// Logger receives a line per message that failed.
	Logger *slog.Logger
}

// SQS wraps h for an SQS-triggered Lambda with ReportBatchItemFailures:
// each message is processed once per event id, its writes committed with
// the processed marker in one transaction; a message already processed is
// skipped; only the messages that failed are reported back, so the rest of
// the batch is not redelivered. On a FIFO queue, a failure also fails the
// messages after it, which SQS must then redeliver in order.
func (s *Store) SQS(h MessageHandler, optFns ...func(*SQSOptions)) (func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error), error) {
	var o SQSOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if err := validateScope(o.Scope); err != nil {
		return nil, fmt.Errorf("%w: %w: SQSOptions.Scope names the consumer", ErrInvalidOptions, err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		failed := false
		for _, msg := range ev.Records {
			if failed && strings.HasSuffix(msg.EventSourceARN, ".fifo") {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
				continue
			}
			if err := s.processMessage(ctx, &o, h, msg); err != nil {
				o.Logger.Warn("idem: message failed", "message_id", msg.MessageId, "error", err.Error())
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
				failed = true
			}
		}
		return resp, nil
	}, nil
}

func (s *Store) processMessage(ctx context.Context, o *SQSOptions, h MessageHandler, msg events.SQSMessage) error {
	id, err := messageID(o, msg)
	if err != nil {
		return err
	}
	// The same event id with another body is not a redelivery: refuse it
	// (to the dead-letter queue, in time) rather than skip it unseen.
	fp, err := Fingerprint("SQS", o.Scope, []byte(msg.Body), false)
	if err != nil {
		return err
	}
	_, err = s.Do(ctx, Request{Scope: o.Scope, Key: id, Fingerprint: fp}, func(ctx context.Context, tx *Tx) (Response, error) {
		if err := contained(func() error { return h(ctx, msg, tx) }); err != nil {
			return Response{}, err
		}
		return Response{StatusCode: http.StatusOK}, nil
	})
	// A replay is a message processed before: success. In progress means
	// another delivery of it is being processed now: retry it later.
	return err
}

func messageID(o *SQSOptions, msg events.SQSMessage) (string, error) {
	switch {
	case o.Key != nil:
		return o.Key(msg)
	case o.IDAttribute != "":
		a, ok := msg.MessageAttributes[o.IDAttribute]
		if !ok || a.StringValue == nil || *a.StringValue == "" {
			return "", fmt.Errorf("%w: message has no %s attribute", ErrInvalidKey, o.IDAttribute)
		}
		return *a.StringValue, nil
	}
	if msg.MessageId == "" {
		return "", fmt.Errorf("%w: message has no messageId", ErrInvalidKey)
	}
	return msg.MessageId, nil
}

// EventHandler processes one EventBridge event, adding its writes to tx.
type EventHandler func(ctx context.Context, ev events.CloudWatchEvent, tx *Tx) error

// EventBridge wraps h for an EventBridge-triggered Lambda: each event is
// processed once per event id under scope (the consumer's name), its writes
// committed with the processed marker. A duplicate delivery returns nil; a
// failure returns the error, so that Lambda retries the event; a panic in
// h is returned as an error too, its lease lapsed.
func (s *Store) EventBridge(scope string, h EventHandler) (func(ctx context.Context, ev events.CloudWatchEvent) error, error) {
	if err := validateScope(scope); err != nil {
		return nil, fmt.Errorf("%w: %w: the scope names the consumer", ErrInvalidOptions, err)
	}
	return func(ctx context.Context, ev events.CloudWatchEvent) error {
		fp, err := Fingerprint("EVENT", ev.Source+"/"+ev.DetailType, ev.Detail, false)
		if err != nil {
			return err
		}
		_, err = s.Do(ctx, Request{Scope: scope, Key: ev.ID, Fingerprint: fp}, func(ctx context.Context, tx *Tx) (Response, error) {
			if err := contained(func() error { return h(ctx, ev, tx) }); err != nil {
				return Response{}, err
			}
			return Response{StatusCode: http.StatusOK}, nil
		})
		if errors.Is(err, ErrInProgress) {
			return fmt.Errorf("event %s is being processed by another delivery: %w", ev.ID, err)
		}
		return err
	}, nil
}

// contained runs h, turning a panic into an error with the panic's value
// and stack: a panicking message fails alone instead of taking its batch
// down with it, and the Do around it lapses its lease as for any error.
func contained(h func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("idem: the handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return h()
}
