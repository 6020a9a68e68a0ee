package idemclient

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ErrOutcomeUnknown is matched (errors.Is) by every error that ends an
// operation which may have taken effect: an *UnknownOutcomeError.
var ErrOutcomeUnknown = errors.New("idemclient: outcome unknown")

// ErrBodyNotReplayable refuses, before anything is sent, a request whose body
// cannot be sent again: it has a body but no GetBody. http.NewRequest sets
// GetBody for a *bytes.Buffer, *bytes.Reader or *strings.Reader body.
var ErrBodyNotReplayable = errors.New("idemclient: the request has a body but no GetBody, so a retry could not resend it")

// UnknownOutcomeError is the error of an operation that ended after an
// attempt that may have taken effect (one without an answer that had a
// connection, a 5xx, a 409 request_in_progress) without an answer that
// tells whether it did: its retries ended (the context's deadline, the
// attempts, or a Retry-After too long to wait), an answer came that is not
// retried and does not tell (a 401, 403 or 404, a 302 to a sign-in page,
// say), or a 307 or 308 was not followed (see the package doc). The operation may have happened or not. Send the same
// request again with Key, later (after a refusal, once its cause is dealt
// with), to learn which: the server replays the result if it happened and
// runs it if it did not.
type UnknownOutcomeError struct {
	Key        string        // the Idempotency-Key every attempt carried
	Attempts   int           // attempts sent, over every redirect followed
	StatusCode int           // the last answer's status; 0 if the last attempt got none
	Code       string        // the last answer's machine-readable code, if it had one
	RetryAfter time.Duration // the last answer's Retry-After, if it had one
	// Response is the last answer, nil if the last attempt got none. Its
	// body is read (up to 64 KiB) and closed; Body holds what was read.
	Response *http.Response
	// Err is why the retries ended: the context's error; a deadline too
	// close for the next attempt (it matches context.DeadlineExceeded); a
	// Retry-After over Options.MaxRetryAfter; a body that GetBody could not
	// give again; when the attempts ran out, the last attempt's error
	// (nil if the last attempt got an answer); when the last answer does
	// not tell the outcome, an error saying so; or, when a 307 or 308 was
	// not followed, why (the http.Client's error, if it gave one).
	Err error
}

func (e *UnknownOutcomeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "idemclient: outcome unknown after %d attempt(s)", e.Attempts)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ", last answer %d", e.StatusCode)
		if e.Code != "" {
			b.WriteString(" " + e.Code)
		}
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	fmt.Fprintf(&b, "; retry later with Idempotency-Key %q", e.Key)
	return b.String()
}

// Is makes errors.Is(err, ErrOutcomeUnknown) true.
func (e *UnknownOutcomeError) Is(target error) bool { return target == ErrOutcomeUnknown }

func (e *UnknownOutcomeError) Unwrap() error { return e.Err }
