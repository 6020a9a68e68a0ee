package chaos

import (
	"math/rand/v2"
	"time"

	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// fault is one fault planned for an operation: its kind and the number
// drawn for it (which call, how many times).
type fault struct {
	kind *faultKind
	p    int
}

// faultKind is a fault the campaign can inject into one operation, limited
// to that operation's calls: its key is in every DynamoDB call on its
// record, its tag in its API request and its provider create.
type faultKind struct {
	name    string
	weight  int // how often it is drawn, against the others (default 3)
	applies func(kind) bool
	// arm queues the fault for op; hit is to be called each time it acts.
	arm func(c *Campaign, op *operation, p int, hit func())
	// plan adjusts the operation (a late copy, a TTL pass) when drawn.
	plan func(op *operation, lease time.Duration)
}

func all(kind) bool       { return true }
func charges(k kind) bool { return k.charge() }
func keyed(k kind) bool   { return k != orderPut }

// match is what names op's DynamoDB calls: its key for a keyed operation
// (every call on its record holds the key), its order id for a PUT.
func match(op *operation) string {
	if op.kind == orderPut {
		return quoted(op.tag)
	}
	return op.key
}

// quoted is a tag as a JSON string holds it: quoted, so that no tag
// matches another it is the prefix of (chaos_1_5, chaos_1_50).
func quoted(tag string) string { return `"` + tag + `"` }

// write is the DynamoDB call of op that p picks: the claim or the commit
// for a keyed operation, the conditional put for a PUT.
func write(op *operation, p int) string {
	if op.kind == orderPut || p%2 == 0 {
		return "PutItem"
	}
	return "TransactWriteItems"
}

func commitOp(op *operation) string {
	if op.kind == orderPut {
		return "PutItem"
	}
	return "TransactWriteItems"
}

// catalog is every per-operation fault.
var catalog = []*faultKind{
	{name: "API answer dropped after the commit", applies: all, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.apiFaults.Inject(faultproxy.Fault{Kind: faultproxy.CommitThenDrop, Match: quoted(op.tag), Reached: hit})
	}},
	{name: "function killed before the provider call", weight: 1, applies: charges, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Sim.Inject(provider.Fault{Kind: provider.Delay, Delay: 10 * time.Second, Match: op.tag, Reached: c.killing(op, hit)})
	}},
	{name: "function killed after the provider's charge", weight: 1, applies: charges, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Sim.Inject(provider.Fault{Kind: provider.HangAfterEffect, Delay: 10 * time.Second, Match: op.tag, Reached: c.killing(op, hit)})
	}},
	{name: "function killed during the commit", weight: 1, applies: all, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Faults.Inject(faultproxy.Fault{Op: commitOp(op), Kind: faultproxy.Latency, Delay: 2 * time.Second, Match: match(op), Reached: c.killing(op, hit)})
	}},
	{name: "function killed after the commit", weight: 1, applies: all, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Faults.Inject(faultproxy.Fault{Op: commitOp(op), Kind: faultproxy.HoldAfter, Delay: 2 * time.Second, Match: match(op), Reached: c.killing(op, hit)})
	}},
	{name: "DynamoDB call landed, its answer lost", applies: all, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Faults.Inject(faultproxy.Fault{Op: write(op, p), Kind: faultproxy.CommitThenDrop, Match: match(op), Reached: hit})
	}},
	{name: "DynamoDB call landing late", applies: all, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Faults.Inject(faultproxy.Fault{Op: write(op, p), Kind: faultproxy.LandLate, Delay: 300 * time.Millisecond, Match: match(op), Reached: hit})
	}},
	{name: "DynamoDB throttled", applies: all, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Faults.Inject(faultproxy.Fault{Op: write(op, p), Kind: faultproxy.Throttle, Times: 1 + p%4, Match: match(op), Reached: hit})
	}},
	{name: "DynamoDB transaction conflict", applies: all, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Faults.Inject(faultproxy.Fault{Op: "PutItem", Kind: faultproxy.TransactionConflict, Times: 1 + p%3, Match: match(op), Reached: hit})
	}},
	// The holder's commit is held past its lease while the late copy takes
	// the key over; the taker's own commit is held too, for less than its
	// lease, so that the holder's lands while the taker still works: only
	// the fence's lease token then refuses it. The taker's hold is armed
	// once the holder's acts, behind every fault the operation drew.
	{name: "DynamoDB commit slowed past the lease", applies: keyed, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Faults.Inject(faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.Latency, Delay: c.cfg.Lease + time.Second, Match: op.key, Reached: func() {
			hit()
			c.stack.Faults.Inject(faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.Latency, Delay: c.cfg.Lease * 3 / 4, Match: op.key, Reached: func() {
				op.event(c.since(), "fault: the next commit slowed, less than its lease")
			}})
		}})
	}, plan: lateCopy},
	{name: "provider 500, saved under its key", applies: charges, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Sim.Inject(provider.Fault{Kind: provider.FailBeforeEffect, Status: 500, Match: op.tag, Reached: hit})
	}},
	{name: "provider 500 after charging", applies: charges, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Sim.Inject(provider.Fault{Kind: provider.FailAfterEffect, Status: 500, Match: op.tag, Reached: hit})
	}},
	{name: "provider timing out after charging", applies: charges, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Sim.Inject(provider.Fault{Kind: provider.DropAfterEffect, Times: 1 + p%3, Match: op.tag, Reached: hit})
	}},
	{name: "provider 429", applies: charges, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Sim.Inject(provider.Fault{Kind: provider.FailBeforeEffect, Status: 429, Times: 1 + p%2, Match: op.tag, Reached: hit})
	}},
	{name: "provider 409 key in use", applies: charges, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Sim.Inject(provider.Fault{Kind: provider.KeyInUse, Times: 1 + p%5, Match: op.tag, Reached: hit})
	}},
	{name: "lease expiring mid-work", applies: charges, arm: func(c *Campaign, op *operation, p int, hit func()) {
		c.stack.Sim.Inject(provider.Fault{Kind: provider.Delay, Delay: c.cfg.Lease + time.Second, Match: op.tag, Reached: hit})
	}, plan: lateCopy},
	{name: "key reused by another request", applies: keyed, arm: func(c *Campaign, op *operation, p int, hit func()) {
		op.impostorHit = hit
	}, plan: func(op *operation, lease time.Duration) { op.impostor = true }},
	{name: "record's TTL passed, request sent again", applies: charges, arm: func(c *Campaign, op *operation, p int, hit func()) {
		op.ttlHit = hit
	}, plan: func(op *operation, lease time.Duration) { op.ttl = true }},
}

// lateCopy sends one more copy of the request once the lease of the first
// is over: the retry that takes it over.
func lateCopy(op *operation, lease time.Duration) { op.late = lease + 300*time.Millisecond }

// plan draws op's faults: none for one operation in four, else one to
// three kinds at once, among those that apply to it.
func plan(op *operation, rng *rand.Rand, lease time.Duration) {
	if rng.IntN(4) == 0 {
		return
	}
	var fit []*faultKind
	total := 0
	for _, k := range catalog {
		if k.applies(op.kind) {
			fit = append(fit, k)
			total += k.drawWeight()
		}
	}
	for range 1 + rng.IntN(3) {
		x := rng.IntN(total)
		for i, k := range fit {
			if x -= k.drawWeight(); x >= 0 {
				continue
			}
			op.faults = append(op.faults, &fault{kind: k, p: rng.IntN(1000)})
			if k.plan != nil {
				k.plan(op, lease)
			}
			total -= k.drawWeight()
			fit = append(fit[:i:i], fit[i+1:]...)
			break
		}
	}
}

func (k *faultKind) drawWeight() int {
	if k.weight == 0 {
		return 3
	}
	return k.weight
}
