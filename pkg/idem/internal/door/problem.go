package door

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/idemkeys/idem/internal/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
)

// RefusalShape is the shape of a refusal: idemhttp.Refusal, which users
// return, has it, as httpapi.Refusal, the door's own, does.
type RefusalShape interface {
	~struct {
		StatusCode int
		Code       string
		Message    string
	}
}

// TransientShape is the shape of a transient failure: idemhttp's
// TransientError, and httpapi's.
type TransientShape interface {
	~struct {
		StatusCode int
		RetryAfter time.Duration
		Code       string
		Err        error
	}
}

// errorTypes find, in a Parse's or a handler's error, the refusal or the
// transient failure a user returned. The types users return are defined
// where they import them (idemhttp), which imports door: door cannot name
// them, so NewConfig makes these readers from the types it is given. They
// find httpapi's types too, which the doors have always taken.
type errorTypes struct {
	// refusal is the refusal in err; found with a nil refusal when err
	// holds a typed nil *Refusal, which refuses nothing.
	refusal   func(err error) (r *httpapi.Refusal, found bool)
	transient func(err error) *httpapi.TransientError
}

func readRefusal[R RefusalShape, P interface {
	*R
	error
}](err error) (*httpapi.Refusal, bool) {
	var p P
	if errors.As(err, &p) {
		if p == nil {
			return nil, true
		}
		r := httpapi.Refusal(*p)
		return &r, true
	}
	var r *httpapi.Refusal
	found := errors.As(err, &r)
	return r, found
}

func readTransient[T TransientShape, P interface {
	*T
	error
}](err error) *httpapi.TransientError {
	var p P
	if errors.As(err, &p) && p != nil {
		t := httpapi.TransientError(*p)
		return &t
	}
	var t *httpapi.TransientError
	errors.As(err, &t)
	return t
}

// problem is a problem details response with a stable code.
func problem(base string, status int, code, detail, retry string) idem.Response {
	p := httpapi.NewProblem(status, code, detail).WithBase(base)
	h := map[string]string{"Content-Type": httpapi.ContentType}
	if retry != "" {
		h["Retry-After"] = retry
	}
	return idem.Response{StatusCode: p.Status, Header: h, Body: p.JSON()}
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
	refusal, _ := c.errs.refusal(err)
	transient := c.errs.transient(err)
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
		return problem(base, refusal.StatusCode, refusal.Code, refusal.Message, "")
	case errors.Is(err, idem.ErrInvalidScope):
		// The core's own check of the scope (the door's comes first).
		return problem(base, http.StatusUnauthorized, "unauthenticated", "no verified identity on this request", "")
	case errors.Is(err, idem.ErrInvalidBody):
		// A request the fingerprint cannot take: the same request is
		// refused again, so no Retry-After.
		return problem(base, http.StatusBadRequest, "invalid_body", err.Error(), "")
	case transient != nil:
		status := transient.StatusCode
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
