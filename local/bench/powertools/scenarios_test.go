package powertools_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

var latencyCases = []struct {
	name   string
	write  bool
	replay bool
}{
	{"first request, no business write", false, false},
	{"first request, one business write", true, false},
	{"replay of a completed request", true, true},
}

// latencies holds, per case and library, the time per request of each
// round and the calls of the last.
type latencies struct {
	perOp      map[string][]time.Duration // case + "/" + library
	calls      map[string]map[string]int
	executions map[string]int
}

// latencies runs each case n times per library in every round, the
// libraries' order rotating from round to round.
func (b *bench) latencies(rounds, n int) latencies {
	l := latencies{perOp: map[string][]time.Duration{}, calls: map[string]map[string]int{}, executions: map[string]int{}}
	for r := range rounds {
		for i := range b.libs {
			lib := b.libs[(i+r)%len(b.libs)]
			prefix := fmt.Sprintf("lat-r%d-%s-", r, strings.ReplaceAll(lib.name(), " ", "_"))
			for _, c := range latencyCases {
				keys := make([]string, n)
				for k := range keys {
					keys[k] = prefix + strconv.FormatBool(c.write) + "-" + strconv.Itoa(k)
					if c.replay {
						keys[k] = prefix + "true-0" // completed by the case before
					}
				}
				elapsed, answers, executions := lib.seq(keys, body, c.write)
				b.checkSeq(lib, c.name, seqResult{answers, executions, n}, c.replay)
				id := c.name + "/" + lib.name()
				l.perOp[id] = append(l.perOp[id], elapsed/time.Duration(n))
				l.calls[id], l.executions[id] = b.calls.take(), executions
			}
		}
	}
	return l
}

// seqResult is what a library's n sequential requests gave: its answers,
// counted by status, and how many times the work ran.
type seqResult struct {
	answers       map[string]int
	executions, n int
}

// checkSeq holds every library to answering each request, and pkg/idem to
// running the work once per request, except Do's replays, which never run
// it (DoAtomic runs the work before it knows, by design).
func (b *bench) checkSeq(lib library, name string, r seqResult, replay bool) {
	b.t.Helper()
	answers, executions, n := r.answers, r.executions, r.n
	if answers["201"] != n {
		b.t.Fatalf("%s, %s: answers %v, want 201 ×%d", lib.name(), name, answers, n)
	}
	g, ok := lib.(*goLib)
	want := n
	if ok && replay && !g.atomic {
		want = 0
	}
	if ok && executions != want {
		b.t.Fatalf("%s, %s: the work ran %d times, want %d", lib.name(), name, executions, want)
	}
}

// outcome is one library's race or slow-holder run.
type outcome struct {
	executions, effects, calls int
	answers                    map[string]int
	slow                       slowResult
}

type slowResult struct {
	holder, retry, replay string
	executions            int
}

// races sends raceWidth requests at once on one key, per library and round.
func (b *bench) races(rounds int) map[string][]outcome {
	out := map[string][]outcome{}
	for r := range rounds {
		for i := range b.libs {
			lib := b.libs[(i+r)%len(b.libs)]
			key := fmt.Sprintf("race-r%d-%d", r, i)
			answers, executions := lib.race(key, raceWidth)
			o := outcome{executions: executions, effects: b.count(lib.orders(), key), calls: total(b.calls.take()), answers: answers}
			if _, ok := lib.(*goLib); ok && o.effects != 1 {
				b.t.Fatalf("%s: %d orders committed by %d requests on one key, want 1", lib.name(), o.effects, raceWidth)
			}
			out[lib.name()] = append(out[lib.name()], o)
		}
	}
	return out
}

// slowHolders runs the holder that outlives its lease, for pkg/idem's Do
// (DoAtomic holds no lease) and Powertools, alternating which goes first.
func (b *bench) slowHolders(rounds int) map[string][]outcome {
	out := map[string][]outcome{}
	sides := []interface {
		library
		slow(key string) slowResult
	}{b.libs[0].(*goLib), b.libs[2].(*jsLib)}
	for r := range rounds {
		for i := range sides {
			lib := sides[(i+r)%len(sides)]
			key := fmt.Sprintf("slow-r%d-%d", r, i)
			s := lib.slow(key)
			o := outcome{executions: s.executions, effects: b.count(lib.orders(), key), calls: total(b.calls.take()), slow: s}
			if _, ok := lib.(*goLib); ok && (o.effects != 1 || s.holder != "ErrLeaseLost" || s.replay != s.retry) {
				b.t.Fatalf("%s: %d orders, holder %q, retry %q, replay %q: want one order, the holder fenced, the retry's answer kept", lib.name(), o.effects, s.holder, s.retry, s.replay)
			}
			out[lib.name()] = append(out[lib.name()], o)
		}
	}
	return out
}

func (j *jsLib) slow(key string) slowResult {
	var r struct {
		Holder, Retry, Replay string
		Executions            int
	}
	j.h.call(map[string]any{"op": "slow", "key": key, "body": body, "leaseMs": lease.Milliseconds()}, &r)
	return slowResult{holder: r.Holder, retry: r.Retry, replay: r.Replay, executions: r.Executions}
}

// otherBodies sends one key with a body, then with another, per library.
func (b *bench) otherBodies() []otherAnswer {
	var out []otherAnswer
	for i, lib := range b.libs {
		answers := lib.other("other-" + strconv.Itoa(i))
		if _, ok := lib.(*goLib); ok && answers[0].second != "ErrFingerprintMismatch" {
			b.t.Fatalf("%s: the same key with another body answered %q, want ErrFingerprintMismatch", lib.name(), answers[0].second)
		}
		out = append(out, answers...)
	}
	b.calls.take()
	return out
}

func total(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

// span shows the smallest and largest of xs, or the one value.
func span(xs []int) string {
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}
