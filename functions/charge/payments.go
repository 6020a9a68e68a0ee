package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// Payments is what the charge asks of the provider; tests and the local
// stack point it at the simulator in local/provider.
type Payments interface {
	CreatePaymentIntent(ctx context.Context, p *stripe.PaymentIntentCreateParams) (*stripe.PaymentIntent, error)
	// ListPaymentIntents yields the intents created from since to until
	// (unix seconds), of customer when it is not "", newest first, every
	// page: Stripe's list API, consistent after the write.
	ListPaymentIntents(ctx context.Context, since, until int64, customer string) stripe.Seq2[*stripe.PaymentIntent, error]
	PaymentIntent(ctx context.Context, id string) (*stripe.PaymentIntent, error)
	Customer(ctx context.Context, id string) (*stripe.Customer, error)
	PaymentMethod(ctx context.Context, id string) (*stripe.PaymentMethod, error)
}

type stripePayments struct {
	client *stripe.Client
	// keyInUse is how a 409 "key in use" is waited out: the pause before
	// each of len(keyInUse) retries.
	keyInUse []time.Duration
}

// keyInUseBackoff waits out a provider request still executing under the
// same key: about 3.5 seconds in all, well inside the function's timeout.
var keyInUseBackoff = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}

// newStripePayments talks to a Stripe-compatible API at baseURL.
//
// Retries: stripe-go v82 retries, up to MaxNetworkRetries times with the
// same Idempotency-Key, a request that got no answer (a network error or a
// timeout) or an answer that is not a Stripe error object (a proxy's HTML
// page); of Stripe's own errors it retries only 429 lock_timeout. It does
// not retry a 409 or a 5xx that carries an error object: a 500 is saved
// under the key, so its retry would only replay it. A 409 "key in use" is
// waited out here instead (createWaiting).
//
// Logs: stripe-go logs whole error objects, with the payment intent's
// description and metadata and the payment method's card and billing
// details; its logger here keeps only the event, never an argument.
//
// transport carries the requests (nil: http.DefaultTransport); traced, it
// is otelhttp's (tracing.Tracing.Transport), and each request, a retry
// included, is a span under the work's, its traceparent sent along.
func newStripePayments(baseURL, secret string, log *slog.Logger, transport http.RoundTripper) *stripePayments {
	return newStripeClient(baseURL, secret, log, transport, 8*time.Second)
}

// newStripeClient is newStripePayments with a timeout per HTTP request.
func newStripeClient(baseURL, secret string, log *slog.Logger, transport http.RoundTripper, timeout time.Duration) *stripePayments {
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(baseURL),
		HTTPClient:        &http.Client{Timeout: timeout, Transport: transport},
		LeveledLogger:     eventsOnly{log},
		MaxNetworkRetries: stripe.Int64(2),
	})
	return &stripePayments{
		client:   stripe.NewClient(secret, stripe.WithBackends(&stripe.Backends{API: backend})),
		keyInUse: keyInUseBackoff,
	}
}

func (s *stripePayments) CreatePaymentIntent(ctx context.Context, p *stripe.PaymentIntentCreateParams) (*stripe.PaymentIntent, error) {
	return createWaiting(ctx, s.keyInUse, func() (*stripe.PaymentIntent, error) { return s.client.V1PaymentIntents.Create(ctx, p) })
}

// createWaiting makes the call, and again after each pause while the
// provider answers 409: another request under the same key still executes,
// and saves its result for this one to replay. The last 409 is returned.
func createWaiting(ctx context.Context, pauses []time.Duration, call func() (*stripe.PaymentIntent, error)) (*stripe.PaymentIntent, error) {
	for i := 0; ; i++ {
		pi, err := call()
		var se *stripe.Error
		if i == len(pauses) || !errors.As(err, &se) || se.HTTPStatusCode != http.StatusConflict {
			return pi, err
		}
		select {
		case <-time.After(pauses[i]):
		case <-ctx.Done():
			return pi, err
		}
	}
}

func (s *stripePayments) ListPaymentIntents(ctx context.Context, since, until int64, customer string) stripe.Seq2[*stripe.PaymentIntent, error] {
	p := &stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since, LesserThanOrEqual: until}}
	p.Limit = stripe.Int64(100) // the most a page holds
	if customer != "" {
		p.Customer = stripe.String(customer)
	}
	return s.client.V1PaymentIntents.List(ctx, p)
}

func (s *stripePayments) PaymentIntent(ctx context.Context, id string) (*stripe.PaymentIntent, error) {
	return s.client.V1PaymentIntents.Retrieve(ctx, id, nil)
}

func (s *stripePayments) Customer(ctx context.Context, id string) (*stripe.Customer, error) {
	return s.client.V1Customers.Retrieve(ctx, id, nil)
}

func (s *stripePayments) PaymentMethod(ctx context.Context, id string) (*stripe.PaymentMethod, error) {
	return s.client.V1PaymentMethods.Retrieve(ctx, id, nil)
}

// eventsOnly is the provider client's logger: it logs which event happened
// (stripe-go's format string, a constant of its code) at warn and error,
// never the values formatted into it, which carry error objects, response
// bodies and URLs with object ids.
type eventsOnly struct{ log *slog.Logger }

func (l eventsOnly) Debugf(format string, v ...any) {}
func (l eventsOnly) Infof(format string, v ...any)  {}
func (l eventsOnly) Warnf(format string, v ...any)  { l.log.Warn("provider client", "event", format) }
func (l eventsOnly) Errorf(format string, v ...any) { l.log.Error("provider client", "event", format) }
