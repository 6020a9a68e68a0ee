package proc

import (
	"bytes"
	"sync"
)

// Output keeps what a child process (or a handler's goroutines) writes
// while another goroutine reads it: a log sink safe for both at once.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String is everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
