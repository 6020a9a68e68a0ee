package idemtest

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// Invoke runs fn as one invocation of the code under test, on a goroutine
// of its own as Lambda runs one in a process of its own, and reports
// whether it crashed. fn gets ctx made the invocation's: hand it to the
// handler, whose door passes it on to the Store (an http.Handler: the
// request's, with Request.WithContext, called directly rather than
// through a server, whose requests carry contexts of their own).
//
// The invocation crashes where a Fault of kind CrashBefore or CrashAfter
// takes one of its calls, or where it calls Crash, and dies there as a
// killed process does: its goroutine ends (runtime.Goexit), so the handler
// never returns and no deferred recover sees a panic. Its Store makes no
// call after it: the lease is neither lapsed nor handed back, no commit is
// settled, and the lease stays live until it runs out (Faults fails the
// test for any call the dead invocation makes, and does not make it). What its caller would see
// is the service's (API Gateway answers 502, SQS delivers the message
// again once its visibility timeout ends); the test then acts as that
// caller, and sends the request again.
//
// A panic is not a crash: the process lives on, and the Store lapses the
// lease, as in production. Invoke panics with fn's panic, its stack in the
// message. If fn ends its goroutine itself (t.FailNow, t.SkipNow), Invoke
// ends its caller's in turn, as the test asked.
func Invoke(ctx context.Context, fn func(ctx context.Context)) (crashed bool) {
	inv := &invocation{}
	ctx = context.WithValue(ctx, invocationKey{}, inv)
	type end struct {
		returned bool
		panicked any
		stack    []byte
	}
	ended := make(chan end, 1)
	go func() {
		var e end
		defer func() {
			if p := recover(); p != nil {
				e.panicked, e.stack = p, debug.Stack()
			}
			ended <- e
		}()
		fn(ctx)
		e.returned = true
	}()
	e := <-ended
	switch {
	case e.returned:
		return false
	case e.panicked != nil:
		panic(fmt.Sprintf("idemtest: Invoke: the invocation panicked: %v\n\n%s", e.panicked, e.stack))
	case inv.dead.Load():
		return true
	}
	runtime.Goexit() // fn's own Goexit: t.FailNow, t.SkipNow
	return false
}

// Crash kills the invocation whose context ctx is (or derives from) where
// it stands, as a CrashBefore does at a call: called in the work, or in a
// fake of a system the work calls, it is a crash during the work, after
// whatever the work did until then. Call it on the invocation's goroutine
// (the work's, under every door); it does not return. It panics if ctx is
// no invocation's: run the handler under Invoke.
func Crash(ctx context.Context) {
	inv := invocationOf(ctx)
	if inv == nil {
		panic("idemtest: Crash: the context is no invocation's: run the handler under Invoke, and pass its context on")
	}
	inv.die()
}

// invocation is one run of Invoke: dead once it crashed.
type invocation struct{ dead atomic.Bool }

type invocationKey struct{}

// invocationOf is the invocation ctx belongs to, or nil. The Store's own
// contexts (context.WithoutCancel for a lapse or a hand-back) keep it.
func invocationOf(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

func (inv *invocation) isDead() bool { return inv != nil && inv.dead.Load() }

// die ends the invocation's goroutine, running its deferred calls (which a
// killed process would not; a call one of them makes is not made, see
// afterDeath) with no panic for a recover to see.
func (inv *invocation) die() {
	inv.dead.Store(true)
	runtime.Goexit()
}

// afterDeath counts a call of an invocation that crashed, fails the test,
// and ends the calling goroutine again without making the call: a killed
// process makes no call, and an error would only be retried.
func (f *Faults) afterDeath(op Op) {
	f.mu.Lock()
	f.calls[op]++
	f.mu.Unlock()
	f.t.Errorf("idemtest: an invocation that crashed made a %s call (not made): a killed process makes none", op)
	runtime.Goexit()
}
