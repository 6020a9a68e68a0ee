package main

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// result is go-gremlins' JSON report (-o) of one target, with the lines
// of each file it mutated, as the copy had them.
type result struct {
	target  target
	Elapsed float64 `json:"elapsed_time"`
	Files   []struct {
		Name      string      `json:"file_name"`
		Mutations []*mutation `json:"mutations"`
		lines     []string
	} `json:"files"`
}

// mutation is one of go-gremlins' mutants.
type mutation struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	// again is what the runner's own test run of the mutant came to, for
	// one of a protocol file that timed out: Status is then that run's.
	again string
}

// protocolFiles are pkg/idem's files that hold the protocol: every mutant
// that lives in one of them is killed by a test or argued equivalent.
var protocolFiles = []string{"admin.go", "atomic.go", "cache.go", "claim.go", "commit.go",
	"complete.go", "decide.go", "lease.go", "record.go", "release.go"}

// counts are a package's mutants by go-gremlins' status.
type counts struct{ killed, lived, notCovered, timedOut, notViable int }

func (c *counts) add(status string) {
	switch status {
	case "KILLED":
		c.killed++
	case "LIVED":
		c.lived++
	case "NOT COVERED":
		c.notCovered++
	case "TIMED OUT":
		c.timedOut++
	case "NOT VIABLE":
		c.notViable++
	}
}

// efficacy is killed over killed plus lived, in percent, as go-gremlins
// counts it; mcover is killed plus lived over every mutant found, in
// percent: go-gremlins leaves the timed-out and the not viable out of the
// whole, which would make a run whose mutants all timed out fully covered.
func (c counts) efficacy() float64 { return percent(c.killed, c.killed+c.lived) }
func (c counts) mcover() float64 {
	return percent(c.killed+c.lived, c.killed+c.lived+c.notCovered+c.timedOut+c.notViable)
}

func percent(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// lived is a mutant the tests did not kill, with the source line it
// changed, its operator marked.
type lived struct {
	where, kind, source string
	protocol            bool
	again               string      // the runner's run of it, when go-gremlins' timed out
	argued              *equivalent // the entry that argues it, if one does
}

// reason is its entry's argument, or "" when none argues it alone.
func (l lived) reason() string {
	if l.argued == nil || !l.argued.argues() {
		return ""
	}
	return l.argued.reason
}

type report struct {
	packages map[string]*counts
	lived    []lived
	retested []lived // the protocol files' timed-out mutants, tested again
	faults   []string
	elapsed  time.Duration
}

func newReport(results []result, eq *equivalents, elapsed time.Duration) report {
	r := report{packages: map[string]*counts{}, elapsed: elapsed}
	mutated, made := map[string]bool{}, map[string]int{}
	for _, res := range results {
		for _, f := range res.Files {
			file := path.Join(res.target.dir, f.Name)
			mutated[file] = true
			pkg := path.Dir(file)
			if r.packages[pkg] == nil {
				r.packages[pkg] = &counts{}
			}
			for _, m := range f.Mutations {
				r.packages[pkg].add(m.Status)
				l := lived{where: fmt.Sprintf("%s:%d:%d", file, m.Line, m.Column), kind: m.Type,
					source: markedLine(f.lines, m.Line, m.Column), protocol: isProtocol(file), again: m.again}
				made[mutantKey(file, m.Type, l.source)]++
				if m.again != "" {
					r.retested = append(r.retested, l)
				}
				if m.Status != "LIVED" {
					continue
				}
				l.argued = eq.argue(file, m.Type, l.source, l.where)
				r.lived = append(r.lived, l)
			}
		}
	}
	r.faults = eq.faults(mutated, made)
	return r
}

// markedLine is line n of lines, trimmed, the operator at col marked.
func markedLine(lines []string, n, col int) string {
	if n < 1 || n > len(lines) {
		return ""
	}
	return marked(lines[n-1], col)
}

func isProtocol(file string) bool {
	return path.Dir(file) == "pkg/idem" && slices.Contains(protocolFiles, path.Base(file))
}

// unargued are the protocol mutants that lived with no reason written
// for each alone.
func (r report) unargued() []string {
	var out []string
	for _, l := range r.lived {
		if l.protocol && l.reason() == "" {
			out = append(out, fmt.Sprintf("%s %s: %s", l.where, l.kind, l.source))
		}
	}
	return out
}

func (r report) total() counts { return r.sum("") }

// sum adds up the package at dir and those below it, or every package
// when dir is "".
func (r report) sum(dir string) counts {
	var t counts
	for p, c := range r.packages {
		if dir != "" && p != dir && !strings.HasPrefix(p, dir+"/") {
			continue
		}
		t.killed += c.killed
		t.lived += c.lived
		t.notCovered += c.notCovered
		t.timedOut += c.timedOut
		t.notViable += c.notViable
	}
	return t
}

func (r report) closing() string {
	t := r.total()
	return fmt.Sprintf("%d killed, %d lived, %d not covered, %d timed out: efficacy %.1f%%, mutant coverage %.1f%%, in %s",
		t.killed, t.lived, t.notCovered, t.timedOut, t.efficacy(), t.mcover(), r.elapsed.Round(time.Second))
}

func (r report) markdown() string {
	var b strings.Builder
	b.WriteString("| package | killed | lived | not covered | timed out | not viable | efficacy | mutant coverage |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	pkgs := make([]string, 0, len(r.packages))
	for p := range r.packages {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	row := func(name string, c counts) {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %.1f%% | %.1f%% |\n", name, c.killed, c.lived,
			c.notCovered, c.timedOut, c.notViable, c.efficacy(), c.mcover())
	}
	for _, p := range pkgs {
		row(p, *r.packages[p])
	}
	if lib := r.sum("pkg/idem"); lib != r.total() && lib != (counts{}) {
		row("**pkg/idem and its packages**", lib)
	}
	row("**all**", r.total())
	fmt.Fprintf(&b, "\n%s.\n\nLived:\n\n", r.closing())
	for _, l := range r.lived {
		note := ""
		switch {
		case l.reason() != "":
			note = " — equivalent: " + l.reason()
		case l.protocol:
			note = " — **protocol file, no reason written**"
		}
		if l.again != "" {
			note += " (timed out in go-gremlins; " + l.again + ")"
		}
		fmt.Fprintf(&b, "- `%s` %s: `%s`%s\n", l.where, l.kind, l.source, note)
	}
	if len(r.retested) > 0 {
		b.WriteString("\nIn a protocol file, decided again by the runner's own runs (their status above is that run's):\n\n")
		for _, l := range r.retested {
			fmt.Fprintf(&b, "- `%s` %s: `%s`: %s\n", l.where, l.kind, l.source, l.again)
		}
	}
	if len(r.faults) > 0 {
		b.WriteString("\nEquivalents entries that argue nothing as they should:\n\n")
		for _, f := range r.faults {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return b.String()
}
