package door

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
)

// Transient is a failure the client should retry under the same key, as
// the door answers it: Status (503 unless it is a 5xx) with problem
// details of Code and Retry-After.
type Transient struct {
	Status     int
	RetryAfter time.Duration
	Code       string
}

// Errors finds, in a Parse's or a handler's error, the refusal or the
// transient failure a user returned. Those types are defined where users
// import them (idemhttp), which imports door, so the doors hand door
// these readers, which use errors.As on their own types.
type Errors struct {
	// Refusal is the refusal in err; found with a nil refusal when err
	// holds a typed nil refusal, which refuses nothing.
	Refusal func(err error) (r *Refused, found bool)
	// Transient is the transient failure in err, or nil.
	Transient func(err error) *Transient
}

// ContentType is the media type of problem details (RFC 9457).
const ContentType = "application/problem+json"

// titles are the short, fixed summaries of the codes, for a problem whose
// type is its own (a ProblemBase); a code not listed has its status's text.
var titles = map[string]string{
	"unauthenticated":         "Not authenticated",
	"idempotency_key_missing": "Idempotency-Key missing",
	"idempotency_key_invalid": "Idempotency-Key invalid",
	"idempotency_key_reused":  "Idempotency-Key reused with another request",
	"request_in_progress":     "Request in progress",
	"invalid_json":            "Invalid JSON body",
	"invalid_body":            "Invalid body",
	"invalid_request":         "Invalid request",
	"body_too_large":          "Body too large",
	"result_too_large":        "Result too large to store",
	"invalid_write":           "Writes cannot be committed",
	"timeout":                 "Timed out",
	"internal_error":          "Internal error",
	"not_found":               "Not found",
	"route_not_found":         "No such route",
}

// problemBody is an RFC 9457 problem details object as the IETF
// Idempotency-Key draft shows it, plus a stable machine-readable code. Its
// type is RFC 9457's "about:blank", whose title is the status's text,
// unless base is set: then base + code, with the code's own title, so
// that the type URI names a document about the code.
func problemBody(base string, status int, code, detail string) []byte {
	typ, title := "about:blank", http.StatusText(status)
	if base != "" {
		typ = base + code
		if t, ok := titles[code]; ok {
			title = t
		}
	}
	// A map, so that the members come in one order, sorted by name.
	b, _ := json.Marshal(map[string]any{"type": typ, "title": title, "status": status, "detail": detail, "code": code}) // strings and an int: nothing to fail
	return b
}

// problem is a problem details response with a stable code.
func problem(base string, status int, code, detail, retry string) idem.Response {
	h := map[string]string{"Content-Type": ContentType}
	if retry != "" {
		h["Retry-After"] = retry
	}
	return idem.Response{StatusCode: status, Header: h, Body: problemBody(base, status, code, detail)}
}

// Problem is the door's problem details response for status, code and
// detail, its type under base as the door's own problems are: what
// idemhttp.Problem gives a handler or a ConflictFunc.
func Problem(base string, status int, code, detail string) idem.Response {
	return problem(base, status, code, detail, "")
}

// errorResponse answers what Do failed with: every error a problem, with
// Retry-After wherever a retry under the same key is the way on.
func (c Config) errorResponse(err error) idem.Response {
	base := c.ProblemBase
	var inProgress *idem.InProgressError
	var unstored interface{ Response() idem.Response }
	refusal, _ := c.Errors.Refusal(err)
	transient := c.Errors.Transient(err)
	switch {
	case errors.As(err, &unstored):
		// The handler's final 5xx or its refusal, or its ConflictFunc's
		// 5xx: sent as it is.
		return unstored.Response()
	case errors.As(err, &inProgress):
		return problem(base, http.StatusConflict, "request_in_progress", "a request with this Idempotency-Key is being processed; retry later", retryAfter(inProgress.RetryAfter))
	case errors.Is(err, idem.ErrLeaseLost):
		// The operation is being finished by the request that took it over;
		// a retry will replay that result.
		return problem(base, http.StatusConflict, "request_in_progress", "this request was taken over by a retry; retry to get its result", "1")
	case errors.Is(err, idem.ErrFingerprintMismatch):
		return problem(base, http.StatusUnprocessableEntity, "idempotency_key_reused", "this Idempotency-Key was used with a different request", "")
	case errors.Is(err, idem.ErrInvalidKey):
		return problem(base, http.StatusBadRequest, "idempotency_key_invalid", err.Error(), "")
	case refusal != nil:
		// The handler's own refusal: its status, nothing stored.
		return problem(base, refusal.Status, refusal.Code, refusal.Message, "")
	case errors.Is(err, idem.ErrInvalidScope):
		// The core's own check of the scope (the door's comes first).
		return problem(base, http.StatusUnauthorized, "unauthenticated", "no verified identity on this request", "")
	case errors.Is(err, idem.ErrInvalidBody):
		// A request the fingerprint cannot take: the same request is
		// refused again, so no Retry-After.
		return problem(base, http.StatusBadRequest, "invalid_body", err.Error(), "")
	case transient != nil:
		status := transient.Status
		if status < 500 || status > 599 {
			status = http.StatusServiceUnavailable // a retry's status, whatever was set
		}
		return problem(base, status, transient.Code, "a dependency failed; retry with the same Idempotency-Key", retryAfter(transient.RetryAfter))
	}
	return definiteResponse(base, err)
}

// definiteResponse answers the store's definite failures, without
// Retry-After, and anything else with a 503 that says a retry is safe.
func definiteResponse(base string, err error) idem.Response {
	switch {
	case errors.Is(err, idem.ErrMisconfigured):
		// The table is missing or the role may not use it: no retry gets
		// past that until someone fixes the configuration.
		return problem(base, http.StatusInternalServerError, "misconfigured", "the service's tables refused the call as configured; no result was stored (retry with the same Idempotency-Key once it is fixed; a new key may repeat the operation)", "")
	case errors.Is(err, idem.ErrWriteConditionFailed):
		// The same writes would meet the same condition on a retry.
		return problem(base, http.StatusInternalServerError, "write_condition_failed", "the operation's writes conflict with what is stored; no result was stored", "")
	case errors.Is(err, idem.ErrResponseTooLarge), errors.Is(err, idem.ErrItemTooLarge),
		errors.Is(err, idem.ErrTooManyWrites), errors.Is(err, idem.ErrTransactionTooLarge):
		return problem(base, http.StatusInternalServerError, "result_too_large", "the result exceeds what can be stored; no result was stored", "")
	case errors.Is(err, idem.ErrInvalidWrite):
		// A definite refusal of the operation's writes (two actions on one
		// item, say): nothing was written, and the same writes would be
		// refused again, so this is no "retry is safe" 503.
		return problem(base, http.StatusInternalServerError, "invalid_write", "the operation's writes cannot be committed; no result was stored", "")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return problem(base, http.StatusServiceUnavailable, "timeout", "the request ran out of time; retry with the same Idempotency-Key", "1")
	}
	return problem(base, http.StatusServiceUnavailable, "internal_error", "the request failed; retrying with the same Idempotency-Key is safe", "1")
}

// failedResponse is a handler's own final 5xx: the lease is lapsed and the
// answer goes back as it is.
type failedResponse struct{ resp idem.Response }

func (e *failedResponse) Error() string {
	return "idem: handler answered " + strconv.Itoa(e.resp.StatusCode) + "; not stored"
}

func (e *failedResponse) Response() idem.Response { return e.resp }

// refusedAnswer is a handler's refusal, returned as its error: the lease
// is lapsed, nothing is stored, and resp, the refusal's problem details,
// goes back.
type refusedAnswer struct {
	err  error
	resp idem.Response
}

func (e *refusedAnswer) Error() string           { return e.err.Error() }
func (e *refusedAnswer) Unwrap() error           { return e.err }
func (e *refusedAnswer) Response() idem.Response { return e.resp }

func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}
