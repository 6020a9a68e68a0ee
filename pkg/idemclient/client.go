package idemclient

import (
	"errors"
	"net/http"
)

// Client sends requests as logical operations through a Transport, under
// an http.Client that follows a 307 or 308 under the same key. Unlike an
// http.Client of your own with that Transport, it hands a 301, 302 or 303
// to a keyed request back as the answer instead of following it as a GET,
// and it ends in an *UnknownOutcomeError when its http.Client stops at a
// 307 or 308 that came after an attempt that may have acted (ten
// redirects, or a GetBody that fails for the redirect; see the package
// doc).
type Client struct {
	t  *Transport
	hc *http.Client
}

// New returns a Client with the options set by optFns.
func New(optFns ...func(*Options)) *Client {
	t := NewTransport(optFns...)
	return &Client{t: t, hc: &http.Client{Transport: t, CheckRedirect: t.checkRedirect}}
}

// checkRedirect is http.Client's default policy (ten redirects at most),
// but for a 301, 302 or 303 to a request of the configured methods: that
// is the answer, not followed. An http.Client follows one with a GET of
// another URL, without the body or the key: whatever that GET answers (a
// gateway's sign-in page, say) is not the operation's answer, and a
// caller who sees its 200 may take it for one.
func (t *Transport) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if r := req.Response; r != nil && t.applies(via[0].Method) && seeOther(r.StatusCode) {
		return http.ErrUseLastResponse
	}
	return nil
}

// seeOther is a redirect that an http.Client follows as a GET.
func seeOther(status int) bool {
	return status == http.StatusMovedPermanently || status == http.StatusFound || status == http.StatusSeeOther
}

// Do sends req, as http.Client.Do does, as one logical operation: a request
// of the configured methods gets a key unless it has one, and is sent under
// it until there is an answer not to retry. That answer is returned as it
// is, a 4xx refusal included (its code: ProblemCode; a replay: Replayed),
// unless an earlier attempt may have acted and the answer does not tell
// whether it did (see the package doc). An error matching
// ErrOutcomeUnknown (an *UnknownOutcomeError, through errors.As) means the
// operation may have happened: retry it later with the error's Key. Any
// other error means it did not.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	if !c.t.applies(req.Method) {
		return c.hc.Do(req) //nolint:gosec // G704: a client sends where its caller asks
	}
	return new(watch).do(c.hc, req)
}
