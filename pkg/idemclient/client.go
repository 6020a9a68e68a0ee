package idemclient

import "net/http"

// Client sends requests as logical operations through a Transport, under
// an http.Client that follows redirects. Unlike an http.Client of your own
// with that Transport, it also ends in an *UnknownOutcomeError when its
// http.Client stops at a 307 or 308 that came after an attempt that may
// have acted (ten redirects, or a GetBody that fails for the redirect; see
// the package doc).
type Client struct {
	t  *Transport
	hc *http.Client
}

// New returns a Client with the options set by optFns.
func New(optFns ...func(*Options)) *Client {
	t := NewTransport(optFns...)
	return &Client{t: t, hc: &http.Client{Transport: t}}
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
		return c.hc.Do(req)
	}
	return new(watch).do(c.hc, req)
}
