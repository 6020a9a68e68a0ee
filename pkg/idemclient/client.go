package idemclient

import "net/http"

// Client sends requests as logical operations through a Transport. Unlike
// an http.Client with that Transport, it puts the key on the request before
// the first send, so that a 307 or 308 redirect carries the same key
// instead of starting a second operation.
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
// unless an earlier attempt may have acted and the refusal does not tell
// whether it did (see the package doc). An error matching
// ErrOutcomeUnknown (an *UnknownOutcomeError, through errors.As) means the
// operation may have happened: retry it later with the error's Key. Any
// other error means it did not.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	if _, set := req.Header[HeaderKey]; c.t.applies(req.Method) && !set {
		req = req.Clone(req.Context())
		if req.Header == nil {
			req.Header = http.Header{}
		}
		req.Header.Set(HeaderKey, c.t.o.NewKey())
	}
	return c.hc.Do(req)
}
