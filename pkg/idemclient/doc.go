// Package idemclient is the client half of an Idempotency-Key API (the IETF
// draft "The Idempotency-Key HTTP Header Field", as pkg/idem serves it, and
// as Stripe's API and clients practise it): it sends one key per logical
// operation and retries with that key until it holds the server's answer.
//
//	c := idemclient.New()
//	req, _ := http.NewRequestWithContext(ctx, "POST", api+"/charges", strings.NewReader(body))
//	resp, err := c.Do(req)
//	var unknown *idemclient.UnknownOutcomeError
//	switch {
//	case errors.As(err, &unknown):
//		// it may have happened: ask again later with unknown.Key
//	case err != nil:
//		// it did not happen
//	default:
//		// resp is the server's answer: a 201, a replay of it
//		// (idemclient.Replayed), or a refusal such as a 422 (idemclient.ProblemCode)
//	}
//
// Transport is the http.RoundTripper that does the work, for an
// http.Client or any library that takes one; Client wraps it.
//
// # One call, one operation
//
// Each Do (each RoundTrip) is one logical operation. A request of the
// configured methods (POST and PATCH by default) that has no Idempotency-Key
// gets one, a random UUID, and every retry of that request carries the same
// key, so the server can make the operation take effect once and answer
// every attempt with the same response. A key the caller set is kept as it
// is.
//
// A key made by Do lives as long as the call. If the operation must survive
// a restart of the process (a crash between the send and the answer, a
// deploy), make the key yourself, persist it with the operation before the
// first send (in the row of the order being paid, say), and set the header:
// after the restart, the same request under the same key gets the
// original's response instead of a second effect.
//
// # What is retried
//
// The same request is sent again, with the same key, after:
//   - a connection error or timeout, when the request may have been sent:
//     the first attempt may have succeeded and lost only its answer;
//   - a 5xx or a 429;
//   - a 409 whose code is request_in_progress: an earlier attempt, or a
//     concurrent one with the same key, is still running.
//
// Nothing else is retried: 400, 401, 403, 404, 413, 422, a 409 of another
// code, and every 2xx and 3xx end the operation, as the response or, after
// an attempt that may have acted, as an unknown outcome (see Outcomes).
// The wait before a retry is the answer's Retry-After (seconds or
// an HTTP-date) where there is one, and at least a capped exponential
// backoff with jitter; the retries end at Options.MaxAttempts, at a
// Retry-After over Options.MaxRetryAfter, or when the next attempt could not
// start before the context's deadline. Options.AttemptTimeout bounds one
// attempt; the context bounds the whole operation.
//
// A body is sent again from the request's GetBody, which http.NewRequest
// sets for a *bytes.Buffer, *bytes.Reader or *strings.Reader. A request
// with a body and no GetBody is refused with ErrBodyNotReplayable before
// anything is sent: the client does not buffer a stream behind the caller's
// back.
//
// # Outcomes
//
// Do has three kinds of result, and never reports a failure that may have
// succeeded as a plain one:
//   - a response: the server's answer, a refusal included (after an
//     attempt that may have acted, only one that tells the outcome: below);
//   - an *UnknownOutcomeError (errors.Is(err, ErrOutcomeUnknown)): the
//     operation ended after an attempt that may have taken effect, without
//     an answer that tells whether it did: the retries ended, or a refusal
//     came that does not tell (below). It carries the key, the attempts and
//     the last answer (its status, code and Retry-After, and the response
//     with its body read); sending the same request with its Key later,
//     once the refusal's cause is dealt with (a token refreshed, say),
//     learns the outcome;
//   - any other error: nothing can have happened (the connection was never
//     made, the context ended before the first send, the body could not be
//     resent before any attempt could have acted).
//
// Once an attempt may have acted (a dropped connection, a timeout, a 5xx,
// a 409 request_in_progress), only an answer that tells the outcome comes
// back as the response: a 2xx or 3xx; a replay, of any status (the stored
// answer of the attempt that took effect); or a 422 idempotency_key_reused,
// which says the key is bound to another request: the server keeps a key
// bound to the request that first took it, through failures and
// takeovers, so no attempt of this one took effect under it. Any other
// refusal, a 401 after a 502 say, may come from a layer that never reads
// the key (an authorizer once the token expired, a gateway's 403 or 404)
// or be the earlier attempt seen from the other side (a 409 "order
// exists"): it is an *UnknownOutcomeError, because the natural answer to a
// plain 401, a new token and a new key, could do the operation twice.
// Attempts that cannot have acted (a 429, a connection never made) do not
// count: a refusal after them is the response.
//
// Error bodies carry a machine-readable code, as RFC 9457 problem details
// (application/problem+json, member "code") or as {"error":{"code":...}};
// ProblemCode reads either, and UnknownOutcomeError.Code and Retry.Code
// hold it. Replayed tells a stored response (Idempotent-Replayed: true)
// from a fresh one; Key tells which key a response's request carried.
//
// # Redirects, and Go's own resend
//
// Transport gives a request its key when it first sees it, so behind an
// http.Client a 307 or 308 redirect would arrive as a new request with a
// new key. Client.Do sets the key before the http.Client sees the request,
// so the redirect keeps it. Go's http.Transport, for its part, resends a
// request that carries an Idempotency-Key once by itself when a kept-alive
// connection turns out to have been closed; that resend happens inside
// Base, under the same key, and is not counted as an attempt here.
//
// # Why not go-retryablehttp
//
// github.com/hashicorp/go-retryablehttp (v0.7.8 read) was the candidate
// base. It is not used, because what this package must get right sits
// where it is least configurable: when the context ends during a backoff
// wait it returns the bare context error, without calling its ErrorHandler,
// so there is no place to say that an earlier attempt may have acted nor to
// hand back the key; its ErrorHandler sees the request only through a
// response, so not after a dropped connection; and it cannot stop early
// when a Retry-After would pass the deadline. Its
// RoundTripper runs a whole http.Client (redirects, cookies, timeouts)
// inside the transport, and reads every body into memory rather than using
// GetBody. Its retry policy (every 5xx but 501, and 429; never a 409) and
// its backoff (Retry-After only on 429 and 503, RFC 1123 dates only) would
// both be replaced. What would be left to reuse is a thirty-line loop, which
// this package writes with the rules above in view.
package idemclient
