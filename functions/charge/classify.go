package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idemclient"
	"github.com/stripe/stripe-go/v82"
)

// answer is a provider's answer to the create, sorted: exactly one field is
// set. docs/charges.md, "What each provider answer becomes", is the
// table of these cases.
type answer struct {
	intent   *stripe.PaymentIntent // created: succeeded, processing, requires_action, ...
	declined *stripe.Error         // card_error: stored as 402
	rejected *stripe.Error         // the provider refused the request: stored as 400 or 422
	unknown  *stripe.Error         // a 5xx the provider saved under the key: settled, never stored
}

// Retry-After for the transient answers: a blip, and a misconfiguration
// that an operator must fix.
const (
	retrySoon    = 2 * time.Second
	retryOperate = 30 * time.Second
)

// classify sorts the create's result. The error is an *idemlambda.TransientError
// for what is not the provider's answer to this request (no answer, a busy
// provider, our own configuration), after which a retry with the same
// downstream key is safe: the provider has saved nothing under it, or
// saved what it will replay.
func classify(pi *stripe.PaymentIntent, err error) (answer, error) {
	if err == nil {
		return answer{intent: pi}, nil
	}
	var se *stripe.Error
	if !errors.As(err, &se) {
		return answer{}, noAnswer(err)
	}
	switch {
	case se.Type == stripe.ErrorTypeCard:
		return answer{declined: se}, nil
	case se.HTTPStatusCode == http.StatusConflict || se.HTTPStatusCode == http.StatusTooManyRequests:
		return answer{}, transient(http.StatusServiceUnavailable, "provider_busy", retrySoon, se)
	case se.HTTPStatusCode >= 500:
		return answer{unknown: se}, nil
	case se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden || se.HTTPStatusCode == http.StatusNotFound:
		// Our key or our base URL, not the client's request: 404 on a
		// create is a wrong URL, since a missing object is a 400 there.
		return answer{}, transient(http.StatusBadGateway, "provider_misconfigured", retryOperate, se)
	case se.HTTPStatusCode >= 400:
		return answer{rejected: se}, nil
	}
	return answer{}, transient(http.StatusBadGateway, "provider_unavailable", retrySoon, se)
}

// noAnswer sorts an error that is not a provider's error object: no answer
// in time, no connection, or an answer that is not the provider's (a
// proxy's page: the provider never saw the request).
func noAnswer(err error) error {
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return transient(http.StatusServiceUnavailable, "provider_timeout", retrySoon, err)
	case errors.As(err, &ue) || errors.As(err, &ne):
		return transient(http.StatusBadGateway, "provider_unavailable", retrySoon, err)
	}
	return transient(http.StatusBadGateway, "provider_misconfigured", retryOperate, err)
}

func transient(status int, code string, after time.Duration, err error) error {
	return &idemlambda.TransientError{StatusCode: status, Code: code, RetryAfter: after, Err: sanitized(err)}
}

// providerFault is what a log line may say about a provider failure: the
// status, type, code and request id, never the message or the objects an
// error carries (the payment intent's description and metadata, the
// payment method's card and billing details).
type providerFault struct {
	status           int
	typ, code, reqID string
}

func (f providerFault) Error() string {
	return fmt.Sprintf("provider answered %d %s %s (request %s)", f.status, f.typ, f.code, f.reqID)
}

// sanitized keeps only the kind of a failure: a network error's text names
// the URL, which holds object ids; a non-JSON answer's text holds its body.
func sanitized(err error) error {
	var se *stripe.Error
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return providerFault{status: se.HTTPStatusCode, typ: string(se.Type), code: string(se.Code), reqID: se.RequestID}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return errors.New("no answer from the provider in time")
	case errors.As(err, &ne):
		return errors.New("no connection to the provider")
	}
	return errors.New("an answer that is not the provider's error object")
}

// fresh says whether the answer's intent was made by this very call: not
// found by settlement, and not replayed by the provider from an earlier
// request under the key (Idempotent-Replayed). A decline's error object
// does not say, so a decline is never fresh.
func (a answer) fresh(found *stripe.PaymentIntent) bool {
	return found == nil && a.intent != nil && a.intent.LastResponse != nil && a.intent.LastResponse.Header.Get(idemclient.HeaderReplayed) != "true"
}
