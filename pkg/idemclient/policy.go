package idemclient

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// judge applies the retry rules to one attempt: its answer's status and
// code, or the error that came instead of an answer. retry says to send the
// request again; mayHaveActed says that this attempt may have taken effect,
// so that, if the retries end without an answer that tells the outcome, the
// outcome is unknown.
//
//   - no answer: retried. It may have acted, whatever the error, unless
//     the trace shows that it never had a connection (sends.neverSent): a
//     dial error can be the last word of Go's own resend of a request that
//     was written, and the server acted on, on a reused connection.
//   - 5xx: retried, may have acted (a gateway's 502 or 504 can come while
//     the work goes on; the server keeps the key for the retry).
//   - 429: retried; the server refused to start.
//   - 409 request_in_progress: retried; the operation is running.
//   - anything else, 400, 401, 403, 404, 409 of another code, 413 and 422
//     among them, is not retried: it is the server's answer, unless an
//     attempt may have acted and it does not tell the outcome
//     (tellsOutcome).
//
// An answer to a resend (sends.resent) does not say what the earlier send
// did: that attempt may have acted, whatever the answer.
func judge(a attempt) (retry, mayHaveActed bool) {
	status := a.status()
	switch {
	case a.err != nil:
		return true, !a.neverSent
	case status == http.StatusConflict && a.code == CodeInProgress:
		return true, true
	case status == http.StatusTooManyRequests:
		return true, a.resent
	case status >= 500:
		return true, true
	}
	return false, a.resent
}

// tellsOutcome reports whether resp, an answer to req that is not
// retried, tells the operation's outcome even after an attempt that may
// have acted:
//
//   - a 2xx is the server's answer;
//   - a replay, of any status, is the stored answer under the key: the
//     outcome of whichever attempt took effect;
//   - a 422 idempotency_key_reused says the key is bound to another
//     request. Every attempt sent this one, and the server keeps a key
//     bound to the request that took it, through a failure, a lapse and a
//     takeover, until it expires: so no attempt of this request took
//     effect under the key;
//   - a 307 or 308 with a Location to follow: an http.Client sends the
//     same request there, with its method and body, and the Transport
//     sends it under the same key as the same operation (hop), so the
//     answer there tells.
//
// Any other answer may come from a layer that never looks at the key (an
// authorizer's 401 once the token expired, a gateway's 403 or 404, a 413,
// a sign-in page's 302, which an http.Client follows as a GET without the
// body), or be the earlier attempt seen from the other side (a 409 "order
// exists" from a server that made the order): it tells nothing of the
// attempt that may have acted.
func tellsOutcome(req *http.Request, resp *http.Response) bool {
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300, Replayed(resp):
		return true
	case s == http.StatusTemporaryRedirect || s == http.StatusPermanentRedirect:
		return followable(req, resp)
	case s == http.StatusUnprocessableEntity:
		return ProblemCode(resp) == CodeKeyReused
	}
	return false
}

// followable reports whether an http.Client follows the redirect resp:
// it has a Location, which parses against req's URL.
func followable(req *http.Request, resp *http.Response) bool {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return false
	}
	_, err := req.URL.Parse(loc)
	return err == nil
}

// backoff is the wait after attempt n (from 1) when the server names none:
// capped exponential, min(hi, lo·2ⁿ⁻¹), with "equal jitter": half of it
// fixed and the other half scaled by u in [0, 1), so it is never over hi
// and never under half the exponential step. lo is positive (NewTransport
// sees to it): lo·2ⁿ⁻¹ overflowed exactly when shifting it back does not
// give lo, a shift of 64 or more included (Go makes it 0).
func backoff(n int, lo, hi time.Duration, u float64) time.Duration {
	step := hi
	if shift := n - 1; shift >= 0 {
		if s := lo << shift; s>>shift == lo && s < hi {
			step = s
		}
	}
	return step/2 + time.Duration(u*float64(step-step/2))
}

// parseRetryAfter reads a Retry-After value, delay-seconds or an HTTP-date
// (RFC 9110, section 10.2.3), relative to now. A date in the past is 0.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > math.MaxInt64/int64(time.Second) {
			return math.MaxInt64, true // longer than anyone will wait
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(0, t.Sub(now)), true
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
