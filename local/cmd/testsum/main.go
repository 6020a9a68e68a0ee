// Command testsum reads `go test -json` on stdin and writes what a person
// wants of it: a line per package as it ends (ok or FAIL, its time and how
// many tests ran, or the one test it ran, as a fuzz run is), the output of
// every test that failed and of every package that failed without a failing
// test (a build error, a panic, a timeout), and at the end the packages'
// wall time and one closing line, "N passed, N failed" (", N skipped" when
// some were). Lines that are not test2json events pass through as they
// come, so make's own lines (• fuzz FuzzX) stay in place.
//
// With -fuzz, the fuzz targets the run means to run ("pkg:FuzzX ...", as
// make fuzz lists them), the summary also says which of them never
// started ("• fuzz FuzzX for N" never came): make test runs them only
// after every package passed, and stops at the first that fails, so a
// failure would otherwise hide them without a word. The closing line ends
// with "; not run: N fuzz targets" then.
//
// It exits 1 when anything failed, when a planned fuzz target did not
// run, or when no test ran at all.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

func main() {
	fuzz := flag.String("fuzz", "", "the fuzz targets the run means to run, pkg:FuzzX separated by spaces")
	flag.Parse()
	os.Exit(run(os.Stdin, os.Stdout, time.Now, strings.Fields(*fuzz)))
}

// event is one line of test2json (go doc test2json), with the build
// events of go test -json (Go 1.24 on).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string
	// FailedBuild is the import path whose build-output says why the
	// package failed to build.
	FailedBuild string
}

// pkg is what is kept of a package until it ends.
type pkg struct {
	output   []string            // outside any test
	tests    map[string][]string // each running test's output, until it ends
	failed   []string            // the output of each test that failed, in order
	counts   [3]int              // passed, failed, skipped
	lastTest string
}

type summary struct {
	out     io.Writer
	pkgs    map[string]*pkg
	builds  map[string][]string // build output by import path
	passed  int
	failed  int
	skipped int
	pkgOK   int
	pkgFail []string
	pkgTime float64 // the packages' own times, added up
	start   time.Time
	now     func() time.Time
	planned []string        // fuzz targets, pkg:FuzzX
	fuzzed  map[string]bool // the fuzz targets that started
}

// fuzzStart is the line make fuzz prints as a target starts.
var fuzzStart = regexp.MustCompile(`^• fuzz (Fuzz\w+) for `)

func run(in io.Reader, out io.Writer, now func() time.Time, planned []string) int {
	s := &summary{out: out, pkgs: map[string]*pkg{}, builds: map[string][]string{}, start: now(), now: now, planned: planned, fuzzed: map[string]bool{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
			if m := fuzzStart.FindStringSubmatch(line); m != nil {
				s.fuzzed[m[1]] = true
			}
			fmt.Fprintln(out, line)
			continue
		}
		s.handle(e)
	}
	return s.finish()
}

func (s *summary) pkg(name string) *pkg {
	p := s.pkgs[name]
	if p == nil {
		p = &pkg{tests: map[string][]string{}}
		s.pkgs[name] = p
	}
	return p
}

func (s *summary) handle(e event) {
	switch e.Action {
	case "build-output":
		s.builds[e.ImportPath] = append(s.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		return // the package's own fail event follows, and prints the output
	}
	p := s.pkg(e.Package)
	if e.Test != "" {
		s.testEvent(p, e)
		return
	}
	switch e.Action {
	case "output":
		p.output = append(p.output, e.Output)
	case "pass", "fail", "skip":
		s.packageEnded(e, p)
	}
}

func (s *summary) testEvent(p *pkg, e event) {
	switch e.Action {
	case "output":
		if !strings.HasPrefix(e.Output, "=== ") { // RUN, PAUSE, CONT, NAME
			p.tests[e.Test] = append(p.tests[e.Test], e.Output)
		}
	case "pass":
		p.counts[0]++
		s.passed++
		p.lastTest = e.Test
		delete(p.tests, e.Test)
	case "skip":
		p.counts[2]++
		s.skipped++
		p.lastTest = e.Test + " (skipped)"
		delete(p.tests, e.Test)
	case "fail":
		p.counts[1]++
		s.failed++
		p.lastTest = e.Test
		p.failed = append(p.failed, failLineFirst(p.tests[e.Test]))
		delete(p.tests, e.Test)
	}
}

// packageEnded prints the package's line, and what failed in it.
func (s *summary) packageEnded(e event, p *pkg) {
	defer delete(s.pkgs, e.Package)
	ran := p.counts[0] + p.counts[1] + p.counts[2]
	if e.Action == "skip" || e.Action == "pass" && ran == 0 {
		return // no test files, or no test matched: nothing to say
	}
	s.pkgTime += e.Elapsed
	what := fmt.Sprintf("%d tests", ran)
	switch {
	case e.FailedBuild != "":
		what = "build failed"
	case ran == 1:
		what = p.lastTest
	}
	if e.Action == "pass" {
		s.pkgOK++
		fmt.Fprintf(s.out, "ok    %-44s %7.1fs  %s\n", short(e.Package), e.Elapsed, what)
		return
	}
	s.pkgFail = append(s.pkgFail, short(e.Package))
	if p.counts[1] > 0 {
		what += fmt.Sprintf(", %d failed", p.counts[1])
	}
	fmt.Fprintf(s.out, "FAIL  %-44s %7.1fs  %s\n", short(e.Package), e.Elapsed, what)
	for _, out := range p.failed {
		indent(s.out, out)
	}
	if p.counts[1] == 0 { // a build error, a panic outside a test, a timeout
		indent(s.out, strings.Join(s.builds[e.FailedBuild], ""))
		for name, out := range p.tests { // tests that never ended: a panic or a timeout
			fmt.Fprintf(s.out, "    (%s did not finish)\n", name)
			indent(s.out, strings.Join(out, ""))
		}
		indent(s.out, strings.Join(p.output, ""))
	}
}

// finish prints the totals and says how to exit.
func (s *summary) finish() int {
	wall := s.now().Sub(s.start).Round(time.Second)
	fmt.Fprintf(s.out, "\n%d package runs ok", s.pkgOK)
	if len(s.pkgFail) > 0 {
		slices.Sort(s.pkgFail)
		fmt.Fprintf(s.out, ", %d failed (%s)", len(s.pkgFail), strings.Join(s.pkgFail, ", "))
	}
	fmt.Fprintf(s.out, "; wall time %v, the packages' own times adding up to %v\n", wall, (time.Duration(s.pkgTime * float64(time.Second))).Round(time.Second))
	if s.passed+s.failed == 0 {
		fmt.Fprintln(s.out, "no test ran")
	}
	closing := fmt.Sprintf("%d passed, %d failed", s.passed, s.failed)
	if s.skipped > 0 {
		closing += fmt.Sprintf(", %d skipped", s.skipped)
	}
	notRun := s.notRun()
	if len(notRun) > 0 {
		why := "they never started"
		if s.failed > 0 || len(s.pkgFail) > 0 {
			why = "a failure came first, and make test stops at it"
		}
		fmt.Fprintf(s.out, "not run (%s): %s\n", why, strings.Join(notRun, ", "))
		closing += fmt.Sprintf("; not run: %d fuzz %s", len(notRun), plural(len(notRun), "target", "targets"))
	}
	fmt.Fprintln(s.out, closing)
	switch {
	case s.failed > 0 || len(s.pkgFail) > 0 || len(notRun) > 0:
		return 1
	case s.passed == 0:
		return 1
	}
	return 0
}

// notRun are the planned fuzz targets that never started.
func (s *summary) notRun() []string {
	var out []string
	for _, p := range s.planned {
		name := p[strings.LastIndexByte(p, ':')+1:]
		if !s.fuzzed[name] {
			out = append(out, name)
		}
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// short is a package path without the module's prefix.
func short(p string) string {
	if s, ok := strings.CutPrefix(p, "github.com/idemkeys/idem/"); ok {
		return s
	}
	return p
}

func indent(w io.Writer, text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if l != "" {
			fmt.Fprintln(w, "    "+strings.TrimPrefix(l, "    "))
		}
	}
}

// failLineFirst is a failed test's output with its "--- FAIL: TestX (1.2s)"
// line, which go test writes last, first.
func failLineFirst(out []string) string {
	i := slices.IndexFunc(out, func(l string) bool { return strings.HasPrefix(strings.TrimLeft(l, " "), "--- FAIL") })
	if i < 0 {
		return strings.Join(out, "")
	}
	return out[i] + strings.Join(slices.Delete(slices.Clone(out), i, i+1), "")
}
