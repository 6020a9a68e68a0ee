package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Report is what a campaign found.
type Report struct {
	Seed       uint64
	Ops        int
	Elapsed    time.Duration
	Search     string
	Rows       []Row
	Count      map[string]int // violations by class: doubleEffect, orphan, mismatch, unfenced, other
	Commits    int            // writes read from the idempotency table's stream that left a record completed
	Violations []string       // each with its operation's whole history
}

// Row is one fault kind: how often it acted, and how often in an operation
// that kept every guarantee.
type Row struct {
	Fault              string
	Injected, Survived int
}

// OK says whether no guarantee was broken.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// check reads the world and holds every operation, the records and the
// stats to their guarantees.
func (c *Campaign) check(ctx context.Context) (*Report, error) {
	w, err := c.read(ctx)
	if err != nil {
		return nil, err
	}
	r := &Report{Seed: c.cfg.Seed, Ops: c.cfg.Ops, Search: c.search, Count: map[string]int{}}
	survived := map[string]int{}
	byKey := map[string]*operation{}
	for _, op := range c.ops {
		byKey[recordID(scope(op.client), op.key)] = op
		v := checkOp(op, w)
		if len(v) == 0 {
			for name, n := range op.hits {
				survived[name] += n
			}
			continue
		}
		var b strings.Builder
		for _, x := range v {
			r.Count[x.class]++
			fmt.Fprintf(&b, "VIOLATION (%s): %s\n", x.class, x.what)
		}
		b.WriteString(c.history(op, w))
		r.Violations = append(r.Violations, b.String())
	}
	for _, rec := range w.inFlight {
		r.Count[other]++
		what := fmt.Sprintf("VIOLATION (%s): record of %s/%s left in progress past its lease (%d)\n", other, rec.Scope, rec.Key, rec.LeaseUntil)
		if op := byKey[recordID(rec.Scope, rec.Key)]; op != nil {
			what += c.history(op, w)
		}
		r.Violations = append(r.Violations, what)
	}
	r.Violations = append(r.Violations, c.checkStream(w, r)...)
	for _, list := range w.commits {
		r.Commits += len(list)
	}
	stats := checkStats(w)
	for _, s := range stats {
		r.Count[other]++
		r.Violations = append(r.Violations, fmt.Sprintf("VIOLATION (%s): %s\n  the consumer's history:\n  %s\n", other, s, strings.Join(c.statsRuns, "\n  ")))
	}
	c.mu.Lock()
	for name, n := range c.injected {
		row := Row{Fault: name, Injected: n, Survived: survived[name]}
		if strings.HasPrefix(name, "message") || strings.HasPrefix(name, "consumer") {
			if len(stats) == 0 {
				row.Survived = n
			}
		}
		r.Rows = append(r.Rows, row)
	}
	c.mu.Unlock()
	sort.Slice(r.Rows, func(i, j int) bool { return r.Rows[i].Fault < r.Rows[j].Fault })
	r.Elapsed = c.since()
	return r, nil
}

// Summary is the table by fault kind and the closing line.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| fault | injected | survived |\n|---|---:|---:|\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %d | %d |\n", row.Fault, row.Injected, row.Survived)
	}
	fmt.Fprintf(&b, "| %s | every charge | every charge that kept its guarantees |\n", r.Search)
	if n := r.Count[other]; n > 0 {
		fmt.Fprintf(&b, "%d other violations (see above)\n", n)
	}
	fmt.Fprintf(&b, "%d writes that left a record completed, read from the idempotency table's stream, each held to the lease the record named\n", r.Commits)
	fmt.Fprintf(&b, "campaign time %v\n", r.Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "%d operations, %d double effects, %d orphans, %d mismatched replays, %d commits without the lease, seed %d\n",
		r.Ops, r.Count[doubleEffect], r.Count[orphan], r.Count[mismatch], r.Count[unfenced], r.Seed)
	return b.String()
}
