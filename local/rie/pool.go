package rie

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Pool holds the execution environments of one function, started on demand
// up to its concurrency and reused, as Lambda reuses warm ones: concurrent
// invocations run in different processes and race on DynamoDB as they
// would deployed. Create it with NewPool.
type Pool struct {
	Name                string // the function's, for logs
	emulator, bootstrap string
	opts                Options
	slots               chan struct{}

	mu      sync.Mutex
	idle    []*Runtime
	busy    map[*Runtime]bool
	crashed map[*Runtime]bool // killed by Crash mid-invocation
}

// NewPool returns a pool of up to concurrency environments, each running
// bootstrap under the emulator with o.
func NewPool(name, emulator, bootstrap string, o Options, concurrency int) *Pool {
	return &Pool{Name: name, emulator: emulator, bootstrap: bootstrap, opts: o,
		slots: make(chan struct{}, concurrency), busy: map[*Runtime]bool{}, crashed: map[*Runtime]bool{}}
}

// Invoke runs one invocation in an idle environment, or a new one when none
// is idle and the concurrency allows. An environment that failed (other than
// with a function error), timed out, was killed or exited is not reused: Lambda, too,
// starts the next invocation after a timeout in a fresh environment.
func (p *Pool) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.slots }()
	rt, err := p.take(ctx)
	if err != nil {
		return nil, err
	}
	// The invocation outlives a client that hangs up, as in Lambda.
	out, err := rt.Invoke(context.WithoutCancel(ctx), payload)
	p.mu.Lock()
	crashed := p.crashed[rt]
	if crashed && err != nil && !errors.Is(err, ErrFunction) {
		// The function's process died mid-invocation: on Lambda, the
		// function's error (Runtime.ExitError), not the service's.
		err = fmt.Errorf("%w: its process was killed: %w", ErrFunction, err)
	}
	delete(p.crashed, rt)
	delete(p.busy, rt)
	// An environment whose function was killed is not reused either, though
	// its emulator lives on: Lambda starts the next invocation afresh.
	reuse := (err == nil || errors.Is(err, ErrFunction) && !errors.Is(err, ErrTimeout)) && !crashed && !rt.Exited()
	if reuse {
		p.idle = append(p.idle, rt)
	}
	p.mu.Unlock()
	if !reuse {
		rt.Stop()
	}
	return out, err
}

func (p *Pool) take(ctx context.Context) (*Runtime, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		rt := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.busy[rt] = true
		p.mu.Unlock()
		return rt, nil
	}
	p.mu.Unlock()
	rt, err := Start(ctx, p.emulator, p.bootstrap, p.opts)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.busy[rt] = true
	p.mu.Unlock()
	return rt, nil
}

// Crash kills, with SIGKILL, every environment running an invocation now,
// and returns how many.
func (p *Pool) Crash() int {
	p.mu.Lock()
	victims := make([]*Runtime, 0, len(p.busy))
	for rt := range p.busy {
		victims = append(victims, rt)
		p.crashed[rt] = true
	}
	p.mu.Unlock()
	for _, rt := range victims {
		rt.Stop()
	}
	return len(victims)
}

// Close stops every environment.
func (p *Pool) Close() {
	p.mu.Lock()
	all := append([]*Runtime(nil), p.idle...)
	for rt := range p.busy {
		all = append(all, rt)
	}
	p.idle, p.busy = nil, map[*Runtime]bool{}
	p.mu.Unlock()
	for _, rt := range all {
		rt.Stop()
	}
}
