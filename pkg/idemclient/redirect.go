package idemclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// hop is a 307 or 308 that the Transport hands back for an http.Client to
// follow. The http.Client sends the redirected request as a new one, whose
// Response is that 307 or 308; the hop rides on that response's Request
// (its context), which an http.Client leaves as it is (it may wrap the
// Body, for its Timeout). Through it the Transport knows the new request
// as the same operation, under the same key, and still knows whether an
// earlier attempt may have acted.
type hop struct {
	key      string
	acted    bool // an attempt before the redirect may have acted
	attempts int  // sent before the redirect, by every hop so far
	resp     *http.Response
	head     []byte // the body, read, when acted
}

// handOn marks resp, a 307 or 308 that op hands back, as a hop. After an
// attempt that may have acted, its body is read (up to maxErrorBody) and
// closed, so that an outcome that turns out unknown can still show it, and
// a Client that watches the call is told that the redirect waits to be
// followed.
func (op *operation) handOn(resp *http.Response) {
	h := &hop{key: op.key, acted: op.acted, attempts: op.attempts(), resp: resp}
	resp.Request = op.req.WithContext(context.WithValue(op.ctx, hopKey{}, h))
	if !op.acted {
		return
	}
	h.head, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close() // what was read is kept; a failed close loses nothing of it
	resp.Body = io.NopCloser(bytes.NewReader(h.head))
	if w, ok := op.ctx.Value(watchKey{}).(*watch); ok {
		w.waiting.Store(h)
	}
}

type hopKey struct{}

// from returns the hop that req follows, nil if it follows none; a Client
// watching the call is told that the redirect was followed.
func from(req *http.Request) *hop {
	if req.Response == nil || req.Response.Request == nil {
		return nil
	}
	h, ok := req.Response.Request.Context().Value(hopKey{}).(*hop)
	if !ok {
		return nil
	}
	if w, ok := req.Context().Value(watchKey{}).(*watch); ok {
		w.waiting.CompareAndSwap(h, nil)
	}
	return h
}

// watch is how Client.Do learns that the http.Client did not follow a 307
// or 308 handed back after an attempt that may have acted: its
// CheckRedirect stopped it (ten redirects), or the request for it could
// not be made (its body could not be given again). The Transport puts such
// a redirect here, and takes it off when its request comes.
type watch struct{ waiting atomic.Pointer[hop] }

type watchKey struct{}

// unknown is the outcome of an operation whose redirect h was not
// followed, for why (nil if the http.Client said nothing).
func (h *hop) unknown(why error) *UnknownOutcomeError {
	if why == nil {
		why = errors.New("the redirect was not followed")
	}
	resp := *h.resp
	resp.Body = io.NopCloser(bytes.NewReader(h.head))
	return &UnknownOutcomeError{
		Key: h.key, Attempts: h.attempts, StatusCode: resp.StatusCode, Response: &resp,
		Err: fmt.Errorf("the %d was not followed, so it does not tell whether an earlier attempt took effect: %w", resp.StatusCode, why),
	}
}

// do sends req through hc, watched for a redirect not followed.
func (w *watch) do(hc *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := hc.Do(req.WithContext(context.WithValue(req.Context(), watchKey{}, w))) //nolint:gosec // G704: a client sends where its caller asks
	h := w.waiting.Load()
	if h == nil || errors.Is(err, ErrOutcomeUnknown) {
		return resp, err
	}
	if resp != nil {
		_ = resp.Body.Close() // the unknown outcome replaces this answer: nothing of it is kept
	}
	return nil, h.unknown(err)
}
