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
// Each Do is one logical operation (so is each RoundTrip, with the
// RoundTrips of the 307 and 308 redirects it hands back). A request of the
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
//   - a failure without an answer (a connection refused, dropped or timed
//     out): an attempt that was sent may have succeeded and lost only its
//     answer;
//   - a 5xx or a 429;
//   - a 409 whose code is request_in_progress: an earlier attempt, or a
//     concurrent one with the same key, is still running.
//
// Nothing else is retried: 400, 401, 403, 404, 413, 422, a 409 of another
// code, and every 2xx and 3xx end the attempts, as the response (a
// redirect, for the http.Client to follow: see Redirects) or, after an
// attempt that may have acted, as an unknown outcome (see Outcomes).
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
//     an answer that tells whether it did: the retries ended, or an answer
//     came that does not tell (below). It carries the key, the attempts and
//     the last answer (its status, code and Retry-After, and the response
//     with its body read); sending the same request with its Key later,
//     once the refusal's cause is dealt with (a token refreshed, say),
//     learns the outcome;
//   - any other error: nothing can have happened (each attempt got a 429
//     or never had a connection; the context ended before the first send;
//     the body could not be resent before any attempt could have acted).
//
// An attempt may have acted when it got a 5xx or a 409
// request_in_progress, or no answer at all, whatever the error, unless
// net/http/httptrace shows that it never had a connection: Base asked for
// one (GetConn) and got none (no GotConn), and wrote nothing (no
// WroteHeaders, no WroteRequest), as when the context or AttemptTimeout
// ends it while connecting. A dial error is not enough: Go's
// http.Transport resends a keyed request by itself when the kept-alive
// connection it reused breaks after the request was written (see below),
// and if that resend cannot connect, its dial error is all that comes back,
// while the server may have acted on the first write. For the same reason
// an attempt that Base sent more than once (more than one GotConn) may
// have acted, whatever the resend's answer, a 429 or a 401 included. A
// Base that does not tell the request's trace of its sends (one that sends
// on a context of its own, or calls no hooks) leaves every attempt without
// an answer one that may have acted. The hooks are composed with any
// ClientTrace the request's context already has, which is still told of
// every send.
//
// Once an attempt may have acted, only an answer that tells the outcome
// comes back as the response:
//   - a 2xx;
//   - a replay, of any status: the stored answer of the attempt that took
//     effect;
//   - a 422 idempotency_key_reused, which says the key is bound to another
//     request: the server keeps a key bound to the request that first took
//     it, through failures and takeovers, so no attempt of this one took
//     effect under it;
//   - a 307 or 308 with a Location to follow: the http.Client sends the
//     same method and body there, the Transport sends it under the same
//     key as the same operation, and the answer there is judged by these
//     rules (see Redirects).
//
// Anything else is an *UnknownOutcomeError. A 401 after a 502, say, may
// come from a layer that never reads the key (an authorizer once the token
// expired, a gateway's 403 or 404); a 301, 302 or 303 may be a gateway's
// sign-in redirect (an ALB authenticate rule once the session expired, an
// OAuth2 proxy), which an http.Client would follow as a GET, handing back
// the sign-in page's 200; a 409 "order exists" may be the earlier attempt
// seen from the other side. The natural answer to a plain 401, a new token
// and a new key, could do the operation twice. Attempts that cannot have
// acted (a 429, a connection never had) do not count: an answer after
// them is the response (a 307 or 308 followed, a 301, 302 or 303 handed
// back by Client: see Redirects).
//
// Error bodies carry a machine-readable code, as RFC 9457 problem details
// (application/problem+json, member "code") or as {"error":{"code":...}};
// ProblemCode reads either, and UnknownOutcomeError.Code and Retry.Code
// hold it. Replayed tells a stored response (Idempotent-Replayed: true)
// from a fresh one; Key tells which key a response's request carried.
//
// # Redirects, and Go's own resend
//
// An http.Client follows a redirect with a new request, whose Response is
// the redirect. Transport takes a request that follows a 307 or 308 it
// handed back as the same operation: under the same key, its attempts
// counted on from the redirect's, and an earlier attempt that may have
// acted still counted. So Client, and an http.Client of your own over a
// Transport, Timeout or not, send a 307 or 308 on under the same key. A
// 301, 302 or 303, which an http.Client follows as a GET of another URL
// without the body or the key, ends the operation after an attempt that
// may have acted before it can be followed (above). After attempts that
// cannot have, Client hands it back as the answer, not followed: the GET's
// answer (a sign-in page's 200, say) would not be the operation's. An
// http.Client of your own follows it as usual.
//
// A 307 or 308 after an attempt that may have acted tells the outcome
// only by being followed. The Transport makes one with no Location, or
// with one that does not parse, an *UnknownOutcomeError itself. Client.Do
// makes one its http.Client does not follow (ten redirects, or a GetBody
// that fails for it) an *UnknownOutcomeError too. An http.Client of your
// own, though, hands back one its CheckRedirect stops as that 307 or 308
// (ErrUseLastResponse) or as its own error (ten redirects), neither of
// which says that the outcome is unknown: treat them so, with Key(resp),
// or use Client.
//
// Go's http.Transport resends a request by itself on a new connection
// when the kept-alive connection it reused breaks: before anything was
// written, if the body can be given again; and after the request was
// written, before the answer's first byte, if the request is replayable (a
// GET, HEAD, OPTIONS or TRACE, or any method with an Idempotency-Key or
// X-Idempotency-Key header, with no body or with a GetBody), which every
// request this package keys is. It goes on while each connection it takes
// was reused and breaks that way. That resend happens inside Base, under
// the same key, and is not counted as an attempt; the trace sees it
// (above).
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
