package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/idemkeys/idem/pkg/idem"
)

// Payments is the provider call the charge makes; tests and the local stack
// point it at the simulator in local/provider.
type Payments interface {
	CreatePaymentIntent(ctx context.Context, p *stripe.PaymentIntentCreateParams) (*stripe.PaymentIntent, error)
}

type stripePayments struct{ client *stripe.Client }

// newStripePayments talks to a Stripe-compatible API at baseURL.
func newStripePayments(baseURL, secret string, log *slog.Logger) *stripePayments {
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:           stripe.String(baseURL),
		HTTPClient:    &http.Client{Timeout: 8 * time.Second},
		LeveledLogger: slogLeveled{log},
		// The client retries network errors and 409/5xx answers with the
		// same Idempotency-Key, which the provider deduplicates.
		MaxNetworkRetries: stripe.Int64(2),
	})
	return &stripePayments{client: stripe.NewClient(secret, stripe.WithBackends(&stripe.Backends{API: backend}))}
}

func (s *stripePayments) CreatePaymentIntent(ctx context.Context, p *stripe.PaymentIntentCreateParams) (*stripe.PaymentIntent, error) {
	return s.client.V1PaymentIntents.Create(ctx, p)
}

// outcome sorts a provider answer: a result to store (a payment intent, or
// a decline or rejection), or a transient failure to release the key on.
type outcome struct {
	intent   *stripe.PaymentIntent
	declined *stripe.Error // card_error: stored as 402
	rejected *stripe.Error // other 4xx: stored as 400 or 422
}

func classify(pi *stripe.PaymentIntent, err error) (outcome, error) {
	if err == nil {
		return outcome{intent: pi}, nil
	}
	var se *stripe.Error
	if !errors.As(err, &se) {
		// No answer at all: a timeout or a dropped connection, after the
		// client's own retries. The provider may have charged; the retry
		// under the same downstream key will find out.
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			return outcome{}, &idem.TransientError{StatusCode: http.StatusServiceUnavailable, RetryAfter: 2 * time.Second, Code: "provider_timeout", Err: err}
		}
		return outcome{}, &idem.TransientError{StatusCode: http.StatusBadGateway, RetryAfter: 2 * time.Second, Code: "provider_unavailable", Err: err}
	}
	switch {
	case se.Type == stripe.ErrorTypeCard:
		return outcome{declined: se}, nil
	case se.HTTPStatusCode == http.StatusTooManyRequests || se.HTTPStatusCode == http.StatusConflict:
		return outcome{}, &idem.TransientError{StatusCode: http.StatusServiceUnavailable, RetryAfter: 2 * time.Second, Code: "provider_busy", Err: se}
	case se.HTTPStatusCode >= 500 || se.HTTPStatusCode == 0:
		return outcome{}, &idem.TransientError{StatusCode: http.StatusBadGateway, RetryAfter: 2 * time.Second, Code: "provider_unavailable", Err: se}
	case se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden:
		// Our credentials, not the client's request: not the client's to fix.
		return outcome{}, &idem.TransientError{StatusCode: http.StatusBadGateway, RetryAfter: 30 * time.Second, Code: "provider_misconfigured", Err: se}
	}
	return outcome{rejected: se}, nil
}

// slogLeveled routes the provider client's own logs into the function's.
type slogLeveled struct{ log *slog.Logger }

func (l slogLeveled) Debugf(format string, v ...any) {}
func (l slogLeveled) Infof(format string, v ...any)  {}
func (l slogLeveled) Warnf(format string, v ...any)  { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l slogLeveled) Errorf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
