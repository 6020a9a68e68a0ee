package idemclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Header names and the code of the IETF draft "The Idempotency-Key HTTP
// Header Field", as pkg/idem answers them.
const (
	HeaderKey      = "Idempotency-Key"
	HeaderReplayed = "Idempotent-Replayed"
	// CodeInProgress is the code of a 409 that means "the same request is
	// still being processed": the one 409 that is retried.
	CodeInProgress = "request_in_progress"
	// CodeKeyReused is the code of a 422 that means "this key is bound to
	// another request": one that tells, after an attempt that may have
	// acted, that no attempt of this request took effect under the key.
	CodeKeyReused = "idempotency_key_reused"
)

// Options configure a Transport or a Client. A field that is zero (or
// below it) once the options have run takes the default in brackets.
type Options struct {
	// Base sends each attempt [http.DefaultTransport]. Whether an attempt
	// without an answer may have acted is read from the net/http/httptrace
	// hooks on the request's context, which http.Transport calls: a Base
	// that does not leaves every such attempt one that may have acted (see
	// the package doc).
	Base http.RoundTripper
	// Methods are the methods that get a key and retries [POST, PATCH].
	// A request of another method goes to Base once, untouched.
	Methods []string
	// MaxAttempts bounds the attempts of one operation, the first one
	// included [8].
	MaxAttempts int
	// MinBackoff and MaxBackoff shape the wait after attempt n when the
	// server names none: between half and all of
	// min(MaxBackoff, MinBackoff·2ⁿ⁻¹) [100ms, 5s].
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits out [1m].
	// A longer one ends the retries (the error carries it).
	MaxRetryAfter time.Duration
	// AttemptTimeout, when set, ends an attempt that has not answered in
	// that time. Such an attempt may have been processed, so it is retried
	// like a dropped connection (one ended before it had a connection
	// counts as never sent). It does not cut the body of the answer
	// handed back, which the caller reads in its own time. The context's
	// deadline bounds the whole operation either way [none].
	AttemptTimeout time.Duration
	// NewKey makes the key of a request that has none [a random UUID,
	// version 4].
	NewKey func() string
	// OnRetry, when set, is told of each retry before its wait: for logs
	// and metrics.
	OnRetry func(Retry)
}

// Retry describes an attempt that is about to be sent again.
type Retry struct {
	Key        string
	Attempt    int           // the attempt that failed, from 1
	StatusCode int           // its answer's status; 0 if it got none
	Code       string        // its answer's machine-readable code, if any
	Err        error         // why it got no answer
	Wait       time.Duration // before the next attempt
}

// Transport is an http.RoundTripper that sends each request of the
// configured methods as one logical operation: under one Idempotency-Key,
// again and again until it has the server's answer (see the package doc).
// It is safe for concurrent use.
type Transport struct {
	o     Options
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// NewTransport returns a Transport with the options set by optFns.
func NewTransport(optFns ...func(*Options)) *Transport {
	o := defaults()
	for _, fn := range optFns {
		fn(&o)
	}
	d := defaults()
	if o.Base == nil {
		o.Base = d.Base
	}
	if len(o.Methods) == 0 {
		o.Methods = d.Methods
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = d.MaxAttempts
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = d.MinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = d.MaxBackoff
	}
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = d.MaxRetryAfter
	}
	if o.NewKey == nil {
		o.NewKey = d.NewKey
	}
	return &Transport{o: o, now: time.Now, sleep: sleep}
}

// defaults are the Options' bracketed defaults.
func defaults() Options {
	return Options{
		Base: http.DefaultTransport, Methods: []string{http.MethodPost, http.MethodPatch},
		MaxAttempts: 8, MinBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second,
		MaxRetryAfter: time.Minute, NewKey: uuid.NewString,
	}
}

// RoundTrip sends req until it has an answer that is not to be retried, and
// returns that answer. It returns an *UnknownOutcomeError when the
// operation ends after an attempt that may have taken effect without an
// answer that tells whether it did (the retries ended, or an answer came
// that does not tell), and a plain error only when nothing can have
// happened. A 307 or 308 comes back for an http.Client to follow, and the
// request that follows it is the same operation (see the package doc). It
// does not modify req: the key goes on a clone, which the response's
// Request is.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.applies(req.Method) {
		return t.o.Base.RoundTrip(req)
	}
	op, err := t.begin(req)
	if err != nil {
		return nil, err
	}
	for {
		if err := op.ctx.Err(); err != nil {
			return op.giveUp(attempt{}, err)
		}
		a, err := op.send()
		if err != nil {
			return op.giveUp(attempt{}, err)
		}
		retry, acted := judge(a)
		op.acted = op.acted || acted
		if !retry {
			return op.answer(a)
		}
		wait, stop := op.next(a)
		if stop != nil {
			return op.giveUp(a, stop)
		}
		detach(a.resp)
		op.report(a, wait)
		if err := t.sleep(op.ctx, wait); err != nil {
			return op.giveUp(attempt{}, err)
		}
	}
}

func (t *Transport) applies(method string) bool { return slices.Contains(t.o.Methods, method) }

// begin checks that the body can be sent again and gives the operation its
// key: the caller's, if the request has one, else that of the 307 or 308
// it follows, else a new one. An operation that follows a redirect goes on
// from where the redirect left it.
func (t *Transport) begin(req *http.Request) (*operation, error) {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		_ = req.Body.Close() // RoundTrip closes the body, refused or not; its Close error is not the request's
		return nil, ErrBodyNotReplayable
	}
	r := req.Clone(req.Context())
	if r.Header == nil {
		r.Header = http.Header{}
	}
	op := &operation{t: t, req: r, ctx: req.Context()}
	h := from(req)
	if h != nil {
		op.acted, op.prior = h.acted, h.attempts
	}
	if _, set := r.Header[HeaderKey]; !set && h != nil {
		r.Header.Set(HeaderKey, h.key)
	} else if !set {
		r.Header.Set(HeaderKey, t.o.NewKey())
	}
	op.key = r.Header.Get(HeaderKey)
	return op, nil
}

// operation is one logical operation: one request, its key, its attempts.
type operation struct {
	t     *Transport
	req   *http.Request // the caller's request, with the key
	ctx   context.Context
	key   string
	n     int     // attempts sent
	prior int     // attempts sent before the redirects this request follows
	acted bool    // an attempt may have taken effect
	last  attempt // the last attempt that was sent
}

func (op *operation) attempts() int { return op.prior + op.n }

// answer ends the operation with a that is not to be retried: as the
// response if it tells the outcome or no attempt may have acted, else as
// an unknown outcome.
func (op *operation) answer(a attempt) (*http.Response, error) {
	if op.acted && !tellsOutcome(op.req, a.resp) {
		return op.giveUp(op.refused(a))
	}
	a.keep()
	if s := a.resp.StatusCode; s == http.StatusTemporaryRedirect || s == http.StatusPermanentRedirect {
		op.handOn(a.resp)
	}
	return a.resp, nil
}

// attempt is what one attempt got back, and what the trace saw of it.
type attempt struct {
	resp          *http.Response
	err           error
	neverSent     bool // it never had a connection (sends.neverSent)
	resent        bool // Base sent it more than once (sends.resent)
	code          string
	retryAfter    time.Duration
	hasRetryAfter bool
	keep          func() // lifts AttemptTimeout off an answer handed back
}

func (a attempt) status() int {
	if a.resp == nil {
		return 0
	}
	return a.resp.StatusCode
}

// detach reads the head of an answer that is not handed back (up to
// maxErrorBody, so its connection can be reused), closes it, and leaves in
// its Body what was read, for UnknownOutcomeError.Response.
func detach(resp *http.Response) {
	if resp == nil {
		return
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close() // what was read is kept; a failed close loses nothing of it
	resp.Body = io.NopCloser(bytes.NewReader(head))
}

// send makes one attempt. Its error is not the attempt's (that is in the
// attempt) but the request's: a body that could not be produced again.
func (op *operation) send() (attempt, error) {
	var seen sends
	r := op.req.WithContext(seen.watch(op.ctx))
	if op.n > 0 && op.req.GetBody != nil {
		body, err := op.req.GetBody()
		if err != nil {
			return attempt{}, fmt.Errorf("idemclient: replaying the body: %w", err)
		}
		r.Body = body
	}
	op.n++
	resp, keep, err := op.roundTrip(r) //nolint:bodyclose // the attempt owns the body: handed back by answer, or read and closed by detach
	if err != nil {
		op.last = attempt{err: err, neverSent: seen.neverSent(), resent: seen.resent()}
		return op.last, nil
	}
	a := attempt{resp: resp, keep: keep, resent: seen.resent()}
	if s := resp.StatusCode; s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500 {
		a.code = ProblemCode(resp)
		a.retryAfter, a.hasRetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), op.t.now())
	}
	op.last = a
	return a, nil
}

// roundTrip sends r through Base, within AttemptTimeout if one is set.
// The timeout runs on while the answer is judged (its code read, a retried
// answer drained); keep stops it for an answer handed back, whose body the
// caller reads in its own time.
func (op *operation) roundTrip(r *http.Request) (_ *http.Response, keep func(), _ error) {
	d := op.t.o.AttemptTimeout
	if d <= 0 {
		resp, err := op.t.o.Base.RoundTrip(r)
		return resp, func() {}, err
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	timer := time.AfterFunc(d, func() { cancel(errAttemptTimeout) })
	resp, err := op.t.o.Base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		timer.Stop()
		if errors.Is(context.Cause(ctx), errAttemptTimeout) && !errors.Is(err, errAttemptTimeout) {
			err = fmt.Errorf("%w (%v): %v", errAttemptTimeout, d, err) //nolint:errorlint // the timeout is the answer: the transport's context.Canceled must not read as the caller's
		}
		cancel(nil)
		return nil, nil, err
	}
	resp.Body = &rewound{Reader: resp.Body, Closer: cancelOnClose{resp.Body, func() { cancel(nil) }}}
	return resp, func() { timer.Stop() }, nil
}

// next is the wait before the next attempt, or why there is none.
func (op *operation) next(a attempt) (time.Duration, error) {
	o := op.t.o
	if err := op.ctx.Err(); err != nil {
		return 0, err
	}
	if op.n >= o.MaxAttempts {
		return 0, errNoAttemptsLeft
	}
	wait := backoff(op.n, o.MinBackoff, o.MaxBackoff, rand.Float64()) //nolint:gosec // G404: jitter that spreads retries, not a secret
	if a.hasRetryAfter {
		if a.retryAfter > o.MaxRetryAfter {
			return 0, fmt.Errorf("the server asks to wait %v, over MaxRetryAfter (%v)", a.retryAfter, o.MaxRetryAfter)
		}
		wait = max(wait, a.retryAfter)
	}
	if deadline, ok := op.ctx.Deadline(); ok && !op.t.now().Add(wait).Before(deadline) {
		return 0, fmt.Errorf("the next attempt, in %v, would start after the deadline: %w", wait.Round(time.Millisecond), context.DeadlineExceeded)
	}
	return wait, nil
}

var (
	// errNoAttemptsLeft is next's word for MaxAttempts reached.
	errNoAttemptsLeft = errors.New("no attempts left")
	errAttemptTimeout = errors.New("no answer within AttemptTimeout")
)

// giveUp ends the operation without an answer to hand back, for why. If
// no attempt can have taken effect, the failure is plain: nothing happened
// (a 429 that was the last answer is handed back as it is). Otherwise the
// outcome is unknown, and the error carries the key to ask again with.
func (op *operation) giveUp(a attempt, why error) (*http.Response, error) {
	if op.n == 0 && op.req.Body != nil {
		_ = op.req.Body.Close() // RoundTrip closes the body, sent or not; its Close error is not the request's
	}
	if errors.Is(why, errNoAttemptsLeft) {
		why = op.last.err
	}
	if !op.acted {
		if a.resp != nil {
			a.keep()
			return a.resp, nil
		}
		return nil, fmt.Errorf("idemclient: gave up after %d attempt(s), none of which can have taken effect: %w", op.attempts(), why)
	}
	detach(a.resp)
	return nil, &UnknownOutcomeError{
		Key: op.key, Attempts: op.attempts(), StatusCode: op.last.status(), Code: op.last.code,
		RetryAfter: op.last.retryAfter, Response: op.last.resp, Err: why,
	}
}

// refused makes an answer that is not retried, after an attempt that may
// have acted and which it does not settle, the last answer of an unknown
// outcome: its code and Retry-After read, the reason said.
func (op *operation) refused(a attempt) (attempt, error) {
	a.code = ProblemCode(a.resp)
	a.retryAfter, a.hasRetryAfter = parseRetryAfter(a.resp.Header.Get("Retry-After"), op.t.now())
	op.last = a
	return a, fmt.Errorf("a %d does not tell whether an attempt that may have acted took effect", a.status())
}

func (op *operation) report(a attempt, wait time.Duration) {
	if op.t.o.OnRetry != nil {
		op.t.o.OnRetry(Retry{Key: op.key, Attempt: op.n, StatusCode: a.status(), Code: a.code, Err: a.err, Wait: wait})
	}
}

// cancelOnClose ends an attempt's context once its answer's body is closed.
type cancelOnClose struct {
	io.Closer
	cancel func()
}

func (c cancelOnClose) Close() error {
	err := c.Closer.Close()
	c.cancel()
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
