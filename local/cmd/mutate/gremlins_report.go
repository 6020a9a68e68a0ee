package main

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// result is go-gremlins' JSON report (-o) of one target.
type result struct {
	target  target
	Elapsed float64 `json:"elapsed_time"`
	Files   []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
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

// efficacy is killed over killed plus lived, in percent; mcover is killed
// plus lived over every mutant found, in percent (go-gremlins' own terms).
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

// lived is a mutant the tests did not kill, with the source line it changed.
type lived struct {
	where, kind, source string
	protocol            bool
	reason              string // its equivalents entry, when one argues it
}

type report struct {
	packages map[string]*counts
	lived    []lived
	elapsed  time.Duration
}

func newReport(results []result, eq equivalents, elapsed time.Duration) report {
	r := report{packages: map[string]*counts{}, elapsed: elapsed}
	for _, res := range results {
		for _, f := range res.Files {
			file := path.Join(res.target.dir, f.Name)
			pkg := path.Dir(file)
			if r.packages[pkg] == nil {
				r.packages[pkg] = &counts{}
			}
			for _, m := range f.Mutations {
				r.packages[pkg].add(m.Status)
				if m.Status != "LIVED" {
					continue
				}
				l := lived{where: fmt.Sprintf("%s:%d:%d", file, m.Line, m.Column), kind: m.Type,
					source: sourceLine(res.target, f.Name, m.Line), protocol: isProtocol(file)}
				l.reason = eq.reason(file, m.Type, l.source)
				r.lived = append(r.lived, l)
			}
		}
	}
	return r
}

func isProtocol(file string) bool {
	return path.Dir(file) == "pkg/idem" && slices.Contains(protocolFiles, path.Base(file))
}

// sourceLine is the line's text, trimmed, from the checkout (the copy is
// the same tree): what an equivalents entry names, since line numbers move.
func sourceLine(t target, name string, line int) string {
	f, err := os.Open(path.Join(t.dir, name))
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read only
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		if n == line {
			return strings.TrimSpace(s.Text())
		}
	}
	return ""
}

// unargued are the protocol mutants that lived with no reason written.
func (r report) unargued() []string {
	var out []string
	for _, l := range r.lived {
		if l.protocol && l.reason == "" {
			out = append(out, fmt.Sprintf("%s %s: %s", l.where, l.kind, l.source))
		}
	}
	return out
}

func (r report) total() counts {
	var t counts
	for _, c := range r.packages {
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
	row("**all**", r.total())
	fmt.Fprintf(&b, "\n%s.\n\nLived:\n\n", r.closing())
	for _, l := range r.lived {
		note := ""
		if l.reason != "" {
			note = " — equivalent: " + l.reason
		} else if l.protocol {
			note = " — **protocol file, no reason written**"
		}
		fmt.Fprintf(&b, "- `%s` %s: `%s`%s\n", l.where, l.kind, l.source, note)
	}
	return b.String()
}
