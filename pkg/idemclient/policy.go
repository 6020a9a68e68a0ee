package idemclient

import (
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// judge applies the retry rules to one attempt: its answer's status and
// code, or the error that came instead of an answer. retry says to send the
// request again; mayHaveActed says that this attempt may have taken effect,
// so that, if the retries end without an answer, the outcome is unknown.
//
//   - no answer: retried. A connection that failed before any byte went out
//     (a dial or DNS error) did nothing; any other failure, a timeout
//     included, may have come after the server acted.
//   - 5xx: retried, may have acted (a gateway's 502 or 504 can come while
//     the work goes on; the server keeps the key for the retry).
//   - 429: retried; the server refused to start.
//   - 409 request_in_progress: retried; the operation is running.
//   - anything else, 400, 401, 403, 404, 409 of another code, 413 and 422
//     among them, is not retried: it is the server's answer, unless an
//     earlier attempt may have acted and it does not tell the outcome
//     (tellsOutcome).
func judge(status int, code string, err error) (retry, mayHaveActed bool) {
	switch {
	case err != nil:
		return true, !notSent(err)
	case status == http.StatusConflict:
		inProgress := code == CodeInProgress
		return inProgress, inProgress
	case status == http.StatusTooManyRequests:
		return true, false
	case status >= 500:
		return true, true
	}
	return false, false
}

// tellsOutcome reports whether resp, an answer that is not retried, tells
// the operation's outcome even after an attempt that may have acted:
//
//   - a 2xx or 3xx is the server's answer (a 3xx is followed by the
//     http.Client, and Client.Do keeps the key on the new request);
//   - a replay, of any status, is the stored answer under the key: the
//     outcome of whichever attempt took effect;
//   - a 422 idempotency_key_reused says the key is bound to another
//     request. Every attempt sent this one, and the server keeps a key
//     bound to the request that took it, through a failure, a lapse and a
//     takeover, until it expires: so no attempt of this request took
//     effect under the key.
//
// Any other refusal may come from a layer that never looks at the key (an
// authorizer's 401 once the token expired, a gateway's 403 or 404, a 413),
// or be the earlier attempt seen from the other side (a 409 "order exists"
// from a server that made the order): it tells nothing of the attempt that
// may have acted.
func tellsOutcome(resp *http.Response) bool {
	switch {
	case resp.StatusCode < 400, Replayed(resp):
		return true
	case resp.StatusCode == http.StatusUnprocessableEntity:
		return ProblemCode(resp) == CodeKeyReused
	}
	return false
}

// notSent reports whether err shows that the request never left: the
// connection was never made.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// backoff is the wait after attempt n (from 1) when the server names none:
// capped exponential, min(hi, lo·2ⁿ⁻¹), with "equal jitter": half of it
// fixed and the other half scaled by u in [0, 1), so it is never over hi
// and never under half the exponential step.
func backoff(n int, lo, hi time.Duration, u float64) time.Duration {
	step := hi
	if shift := n - 1; shift >= 0 && shift < 62 {
		if s := lo << shift; s > 0 && s>>shift == lo && s < hi {
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
