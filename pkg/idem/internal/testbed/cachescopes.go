package testbed

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
)

// ScopePlan walks one key, "k1", through three callers of a Store with a
// cache (Options.Cache), to show that the cache keeps their scopes apart
// as the table does: alice completes k1; bob sends k1 with alice's body,
// carol with another; each gets the answer of its own work, never
// another's nor a 422. Then the same after Delete removed alice's record
// and she completed k1 again, and after the records expired (the clock
// past the TTL).
//
// The work under test calls Work with its scope, once each time it runs;
// Run's send sends one request from scope with body under k1 and returns
// the answer's body ("" where the door answers none, as a queue's does) or
// the error (a 422 among them).
type ScopePlan struct {
	mu   sync.Mutex
	runs map[string]int
}

// Work counts a run of scope's work and returns its answer: the scope and
// the run's number ("bob#2").
func (p *ScopePlan) Work(scope string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runs == nil {
		p.runs = map[string]int{}
	}
	p.runs[scope]++
	return scope + "#" + strconv.Itoa(p.runs[scope])
}

func (p *ScopePlan) ran(scope string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs[scope]
}

// The bodies of the plan: alice's and bob's, and carol's other one.
const (
	PlanBody      = `{"a":1}`
	PlanOtherBody = `{"a":2}`
)

// planStep is one request of the plan and what must come of it: the
// answer of run of scope's own work, run anew (fresh) or replayed, from
// the cache without a DynamoDB call (cached).
type planStep struct {
	scope, body string
	run         int
	fresh       bool
	cached      bool
}

// Run runs the plan on f, whose Store has a cache and stands behind send.
func (p *ScopePlan) Run(f *Fixture, send func(scope, body string) (answer string, err error)) {
	f.T.Helper()
	p.steps(f, send, "first life",
		planStep{"alice", PlanBody, 1, true, false},
		planStep{"alice", PlanBody, 1, false, true}, // the cache is on
		planStep{"bob", PlanBody, 1, true, false},
		planStep{"carol", PlanOtherBody, 1, true, false},
		planStep{"bob", PlanBody, 1, false, true},
		planStep{"carol", PlanOtherBody, 1, false, true},
		planStep{"alice", PlanBody, 1, false, true},
	)
	f.DeleteCompleted("alice", "k1")
	p.steps(f, send, "after alice's record was deleted",
		planStep{"alice", PlanBody, 2, true, false},
		planStep{"bob", PlanBody, 1, false, false},
		planStep{"carol", PlanOtherBody, 1, false, false},
		planStep{"alice", PlanBody, 2, false, true},
	)
	f.DeleteCompleted("bob", "k1")
	p.steps(f, send, "after bob's record was deleted",
		planStep{"bob", PlanBody, 2, true, false},
		planStep{"alice", PlanBody, 2, false, true},
		planStep{"bob", PlanBody, 2, false, true},
	)
	f.Clock.Advance(idem.MinTTL + time.Hour) // the default TTL is MinTTL
	p.steps(f, send, "after the records expired",
		planStep{"alice", PlanBody, 3, true, false},
		planStep{"bob", PlanBody, 3, true, false},
		planStep{"carol", PlanOtherBody, 2, true, false},
		planStep{"bob", PlanBody, 3, false, true},
	)
}

func (p *ScopePlan) steps(f *Fixture, send func(scope, body string) (string, error), phase string, steps ...planStep) {
	f.T.Helper()
	for i, s := range steps {
		before := p.ran(s.scope)
		f.DB.Reset()
		answer, err := send(s.scope, s.body)
		want := s.scope + "#" + strconv.Itoa(s.run)
		switch ran := p.ran(s.scope) - before; {
		case err != nil:
			f.T.Fatalf("%s, step %d: %s sent k1 with %s: %v; want the answer of its own work, %s", phase, i, s.scope, s.body, err, want)
		case answer != "" && answer != want:
			f.T.Fatalf("%s, step %d: %s sent k1 with %s and got %q, want %q, its own", phase, i, s.scope, s.body, answer, want)
		case s.fresh && ran != 1, !s.fresh && ran != 0:
			f.T.Fatalf("%s, step %d: %s's work ran %d times on k1 with %s, want %d (%s)", phase, i, s.scope, ran, s.body, map[bool]int{true: 1}[s.fresh], want)
		case s.cached && f.DB.Total() != 0:
			f.T.Fatalf("%s, step %d: %s's replay cost DynamoDB calls %v, want none (from the cache)", phase, i, s.scope, f.DB.Calls())
		}
	}
}

// DeleteCompleted deletes the completed record of (scope, key), as an operator
// would, through the fixture's Store (whose cache forgets it).
func (f *Fixture) DeleteCompleted(scope, key string) {
	f.T.Helper()
	ctx := context.Background()
	rec, err := f.Store.Inspect(ctx, scope, key)
	if err != nil {
		f.T.Fatal(err)
	}
	if err := f.Store.Delete(ctx, rec, "the test reuses the key"); err != nil {
		f.T.Fatal(err)
	}
}
