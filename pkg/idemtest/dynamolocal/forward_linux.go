package dynamolocal

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// forwarder answers for an engine in a namespace of its own: each
// connection it accepts is joined to one the helper made to the engine
// inside and handed back over ctl.
type forwarder struct {
	ln  net.Listener
	ctl *net.UnixConn // one request at a time, under ask

	ask   sync.Mutex
	mu    sync.Mutex
	conns map[net.Conn]bool // open, to close with the forwarder
}

func (f *forwarder) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		go f.join(c)
	}
}

// errNotAnswering: the engine does not accept connections (yet).
var errNotAnswering = errors.New("the engine does not answer in its namespace")

// engineConn asks the helper for a connection to the engine.
func (f *forwarder) engineConn() (net.Conn, error) {
	f.ask.Lock()
	defer f.ask.Unlock()
	if err := f.ctl.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return nil, err
	}
	defer func() { _ = f.ctl.SetDeadline(time.Time{}) }() // the next request sets its own
	if _, err := f.ctl.Write([]byte{'?'}); err != nil {
		return nil, err
	}
	b, oob := make([]byte, 1), make([]byte, syscall.CmsgSpace(4))
	_, oobn, _, _, err := f.ctl.ReadMsgUnix(b, oob)
	switch {
	case err != nil:
		return nil, err
	case b[0] != 'C':
		return nil, errNotAnswering
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errors.Join(errNotAnswering, err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, errors.Join(errNotAnswering, err)
	}
	file := os.NewFile(uintptr(fds[0]), "engine")
	defer func() { _ = file.Close() }() // FileConn has its own copy of the descriptor
	return net.FileConn(file)
}

// join copies between a client and the engine until both are done, each
// direction's end passed on as a half close. Its copies and closes end a
// connection however they fail (the peer sees the end as its own error),
// so their errors are not kept.
func (f *forwarder) join(c net.Conn) {
	e, err := f.engineConn()
	if err != nil {
		_ = c.Close() // the client sees the engine refuse
		return
	}
	if !f.track(c, e) {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(e, c)
		_ = e.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, e)
	_ = c.(*net.TCPConn).CloseWrite()
	<-done
	f.untrack(c, e)
}

// track keeps c and e to close with the forwarder; false, having closed
// them, once it is closed.
func (f *forwarder) track(c, e net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		_, _ = c.Close(), e.Close() // the forwarder is closed: so are they
		return false
	}
	f.conns[c], f.conns[e] = true, true
	return true
}

func (f *forwarder) untrack(c, e net.Conn) {
	_, _ = c.Close(), e.Close() // both directions are done
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conns, c)
	delete(f.conns, e)
}

// close stops accepting and closes every connection; nil does nothing.
func (f *forwarder) close() {
	if f == nil {
		return
	}
	// Closing is all there is to do: an error says only that it was closed.
	_, _ = f.ln.Close(), f.ctl.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.conns = nil
}
