package idemclient

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
)

// sends is what net/http/httptrace shows of one attempt's sends: every
// send that Base makes of it, Go's http.Transport's own resend on a new
// connection included, since that resend runs under the attempt's context.
// Its hooks may run on the transport's goroutines, even after RoundTrip
// has returned, so they only ever add.
type sends struct {
	sought atomic.Bool  // a connection was asked for (GetConn)
	conns  atomic.Int32 // connections the attempt got (GotConn), one per send
	wrote  atomic.Bool  // some of the request was written (WroteHeaders, WroteRequest)
}

// watch returns ctx with hooks that record the attempt's sends into s,
// composed with any ClientTrace ctx already carries (which is still told
// of every event).
func (s *sends) watch(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:      func(string) { s.sought.Store(true) },
		GotConn:      func(httptrace.GotConnInfo) { s.conns.Add(1) },
		WroteHeaders: func() { s.wrote.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { s.wrote.Store(true) },
	})
}

// neverSent reports whether the trace shows that the attempt cannot have
// reached the server: Base asked for a connection and got none, and wrote
// nothing. Without the GetConn, nothing is known (a Base that does not pass
// the request's context to an http.Transport, or does not call the hooks),
// and an attempt without an answer is taken to have been sent.
//
// A connection got is enough to count as sent, written or not: over
// HTTP/2 a RoundTrip that fails can return before the write hooks of a
// request already written are called.
func (s *sends) neverSent() bool {
	return s.sought.Load() && s.conns.Load() == 0 && !s.wrote.Load()
}

// resent reports whether Base sent the attempt more than once: Go's
// http.Transport resends a request that carries an Idempotency-Key by
// itself when the kept-alive connection it reused breaks before the
// answer. The earlier send had a connection, and may have acted, whatever
// the answer to the resend says.
func (s *sends) resent() bool { return s.conns.Load() > 1 }
