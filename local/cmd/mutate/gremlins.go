package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// runGremlins is the gremlins subcommand: go-gremlins over each target as
// args say; 0 when every mutant of a protocol file was killed or argued
// equivalent (those go-gremlins did not settle decided again by the
// runner) and every entry argues one, 1 otherwise or on a failure, 2 for
// bad flags.
func runGremlins(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gremlins", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "bin/mutate/gremlins.md", "the report (Markdown)")
	work := fs.String("work", "bin/mutate/gremlins", "the scratch directory: the tree's copy and go-gremlins' JSON")
	equiv := fs.String("equivalent", "local/mutate/gremlins-equivalent.txt", "the mutants of protocol files argued equivalent")
	coef := fs.Int("timeout-coefficient", 3, "a mutant's test run may take this many times the coverage run")
	workers := fs.Int("workers", 3, "mutants tested at once, each in its own copy (the tests mostly wait on the engine)")
	again := fs.Duration("timeout-again", 5*time.Minute, "go test -timeout for the runner's own run of a protocol file's timed-out mutant")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	targets := defaultTargets()
	if fs.NArg() > 0 {
		targets = selectTargets(fs.Args())
		if len(targets) == 0 {
			fmt.Fprintf(stderr, "mutate gremlins: no target among %v; the targets are %s\n", fs.Args(), targetNames())
			return 2
		}
	}
	eq, err := readEquivalents(*equiv)
	if err != nil {
		fmt.Fprintln(stderr, "mutate gremlins:", err)
		return 1
	}
	start := time.Now()
	c := gremlinsConfig{eq: eq, work: *work, coefficient: *coef, workers: *workers, again: *again, stdout: stdout, stderr: stderr}
	results, err := unleashAll(ctx, c, targets)
	if err != nil {
		fmt.Fprintln(stderr, "mutate gremlins:", err)
		return 1
	}
	rep := newReport(results, eq, time.Since(start))
	if err := writeFile(*out, rep.markdown()); err != nil {
		fmt.Fprintln(stderr, "mutate gremlins:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n• the report: %s\n", rep.closing(), *out)
	code := 0
	if len(rep.unargued()) > 0 {
		fmt.Fprintf(stderr, "mutate gremlins: %d protocol mutants lived and no reason is written for each alone in %s:\n  %s\n",
			len(rep.unargued()), *equiv, strings.Join(rep.unargued(), "\n  "))
		code = 1
	}
	if len(rep.faults) > 0 {
		fmt.Fprintf(stderr, "mutate gremlins: %s\n", strings.Join(rep.faults, "\n"))
		code = 1
	}
	return code
}

// target is one go-gremlins run: a directory of the module, whose packages
// (it and those below it) are mutated, less the files that match exclude.
type target struct {
	name    string
	dir     string   // relative to the module's root, as go-gremlins takes it
	exclude []string // go-gremlins' --exclude-files, paths relative to dir
}

// defaultTargets are the library and its client: pkg/idem's protocol
// files; the rest of pkg/idem's own files; the packages below it, its
// doors and its internal packages (the model's Promela harness and the
// tests' shared fixture are tests, not the library); and pkg/idemclient.
// Each can be run alone (make mutate-gremlins TARGETS=idem-protocol): the
// protocol files hold the mutants that must be killed or argued, and
// pkg/idem's own tests are the slowest to run per mutant. The files are
// read from the working directory, the module's root.
func defaultTargets() []target {
	return []target{
		{name: "idem-protocol", dir: "pkg/idem", exclude: []string{`/`, notProtocol()}},
		{name: "idem-core", dir: "pkg/idem", exclude: []string{`/`, `^(` + protocolAlternation() + `)$`}},
		{name: "idem-packages", dir: "pkg/idem", exclude: []string{`^[^/]*$`, `^model/`, `^internal/testbed/`}},
		{name: "idemclient", dir: "pkg/idemclient"},
	}
}

// protocolAlternation is protocolFiles as a regular expression's
// alternation, dots quoted.
func protocolAlternation() string {
	quoted := make([]string, len(protocolFiles))
	for i, f := range protocolFiles {
		quoted[i] = regexp.QuoteMeta(f)
	}
	return strings.Join(quoted, "|")
}

// notProtocol matches pkg/idem's own files that are not protocol files.
// Go's regular expressions have no negative lookahead, so it names them:
// every .go file of the directory the protocol list leaves out.
func notProtocol() string {
	var others []string
	entries, _ := os.ReadDir("pkg/idem") // no directory: no file to exclude, and go-gremlins fails on the target itself
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && !slices.Contains(protocolFiles, n) {
			others = append(others, regexp.QuoteMeta(n))
		}
	}
	return `^(` + strings.Join(others, "|") + `)$`
}

func selectTargets(names []string) []target {
	var ts []target
	for _, t := range defaultTargets() {
		for _, n := range names {
			if n == t.name {
				ts = append(ts, t)
			}
		}
	}
	return ts
}

func targetNames() string {
	var ns []string
	for _, t := range defaultTargets() {
		ns = append(ns, t.name)
	}
	return strings.Join(ns, ", ")
}

type gremlinsConfig struct {
	eq          *equivalents
	work        string
	coefficient int
	workers     int
	again       time.Duration
	stdout      io.Writer
	stderr      io.Writer
}

// unleashAll runs go-gremlins over each target in turn on one scratch copy
// and engine, then tests again each mutant of a protocol file whose status
// go-gremlins did not settle (retest). go-gremlins tests c.workers mutants at once, each in a copy of its
// own, all on the one engine: pkg/idem's tests spend most of their time
// waiting on it, so that four runs at once took 1.3 times as long as one
// on the two-core machine.
func unleashAll(ctx context.Context, c gremlinsConfig, targets []target) ([]result, error) {
	s, err := newScratch(ctx, c.work, c.stdout)
	if err != nil {
		return nil, err
	}
	defer s.close()
	var results []result
	for _, t := range targets {
		r, err := unleash(ctx, c, s, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		if err := retest(ctx, c, s, r); err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// retest decides again, by the runner's own runs, each mutant of a
// protocol file whose status go-gremlins did not settle: a protocol
// mutant is killed by a test or argued, never let off by the machine's
// load or the tool's blind spots. They are those that timed out (a run
// past its bound, which a hung mutant and a busy machine both make),
// those not covered (go-gremlins reads coverage from Go's cover profile,
// which counts statements, so that a switch's case expressions and a
// package-level declaration's are never covered in its eyes, whatever the
// tests run), and those killed that an equivalents entry argues (three
// mutants tested at once on a two-core machine can fail a test by
// chance). The runner applies each to the copy itself, runs its package's
// tests as go-gremlins does with go test's own -timeout of c.again, and
// counts it killed when that run fails (by a test, or by the timeout's
// panic, as make test would) and a second run fails too; lived otherwise.
func retest(ctx context.Context, c gremlinsConfig, s *scratch, r result) error {
	type job struct {
		file string
		m    *mutation
	}
	var jobs []job
	for _, f := range r.Files {
		file := path.Join(r.target.dir, f.Name)
		if !isProtocol(file) {
			continue
		}
		for _, m := range f.Mutations {
			argued := m.Status == "KILLED" && c.eq.find(file, m.Type, markedLine(f.lines, m.Line, m.Column)) != nil
			if m.Status == "TIMED OUT" || m.Status == "NOT COVERED" || argued {
				jobs = append(jobs, job{file, m})
			}
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	fmt.Fprintf(c.stdout, "• %d mutants of protocol files to decide again, %d at once\n", len(jobs), c.workers)
	queue := make(chan job, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	ctx, cancel := context.WithCancel(ctx) // the first failure stops the others
	defer cancel()
	errs := make(chan error, c.workers)
	for w := range c.workers {
		go func() {
			err := func() error {
				copy, err := s.clone(fmt.Sprintf("retest-%d", w))
				if err != nil {
					return err
				}
				defer copy.close()
				for j := range queue {
					if err := decide(ctx, c, copy, j.file, j.m); err != nil {
						return err
					}
				}
				return nil
			}()
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	var err error
	for range c.workers {
		err = errors.Join(err, <-errs)
	}
	return err
}

// decide tests m alone in copy, twice when it fails the first time, and
// sets its status to what that says.
func decide(ctx context.Context, c gremlinsConfig, copy *scratch, file string, m *mutation) error {
	was := strings.ToLower(m.Status)
	var v verdict
	var err error
	for range 2 {
		if v, err = testMutation(ctx, c, copy, file, m); err != nil || !v.failed() || v.build != "" {
			break // a kill is run twice; a mutant that does not compile, once
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("%s:%d:%d %s, tested again: %w", file, m.Line, m.Column, m.Type, err)
	case v.build != "":
		// go-gremlins builds no mutant it finds not covered: one that
		// does not compile (a string constant's + made -) is no mutant.
		m.Status, m.again = "NOT VIABLE", was+" in go-gremlins; alone, it does not compile"
	case v.failed():
		m.Status, m.again = "KILLED", was+" in go-gremlins; alone, killed twice by "+v.kill()
	default:
		m.Status, m.again = "LIVED", was+" in go-gremlins; alone, its package's tests passed"
	}
	fmt.Fprintf(c.stdout, "• %s:%d:%d %s: %s\n", file, m.Line, m.Column, m.Type, m.again)
	return nil
}

// testMutation applies m to file in the copy, runs the tests of file's
// package, and puts the file back. A mutant that does not compile is a
// verdict whose build says so.
func testMutation(ctx context.Context, c gremlinsConfig, s *scratch, file string, m *mutation) (v verdict, err error) {
	orig, err := s.root.ReadFile(file)
	if err != nil {
		return v, err
	}
	text, err := mutate(string(orig), m.Line, m.Column, m.Type)
	if err != nil {
		return v, err
	}
	restore, err := replace(s.root, map[string]string{file: text})
	if err != nil {
		return v, err
	}
	defer func() { err = errors.Join(err, restore()) }()
	return goTest(ctx, s, "./"+path.Dir(file), []string{"-short", "-run=^(Test|Fuzz)", "-timeout", c.again.String()}, time.Now())
}

// unleash runs go-gremlins over one target and reads its JSON report. The
// tests run with -short, and without the examples (GOFLAGS): an example
// creates its tables under fixed names, which every run after the first
// finds on the shared engine (go-gremlins runs its mutants' tests with no
// pause in which to empty it), and which would count every mutant its
// package covers as killed. What only a long run or an example would kill
// lives, which makes the figure a lower bound.
func unleash(ctx context.Context, c gremlinsConfig, s *scratch, t target) (result, error) {
	report := filepath.Join(filepath.Dir(s.src), t.name+".json")
	if err := os.Remove(report); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return result{}, err // a report left by an earlier run must not be read as this one's
	}
	args := []string{"tool", "-modfile=tools/go.mod", "gremlins", "unleash", "--workers", fmt.Sprint(c.workers),
		"--timeout-coefficient", fmt.Sprint(c.coefficient), "-o", report}
	args = append(args, mutatorFlags()...)
	for _, e := range t.exclude {
		args = append(args, "-E", e)
	}
	args = append(args, "./"+t.dir)
	fmt.Fprintf(c.stdout, "• go %s\n", strings.Join(args, " "))
	cmd := s.command(ctx, args...)
	// go-gremlins reads its settings from GREMLINS_ variables too: the
	// flags alone decide. -count=1: go test caches a coverage run, and
	// go-gremlins bounds each mutant's run by its coverage run's time, so
	// a cached one (an earlier target's run of the same package) would
	// time every mutant out.
	cmd.Env = append(slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "GREMLINS_") }),
		"GOFLAGS=-short -count=1 -run=^(Test|Fuzz)")
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("go-gremlins: %w", err)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		// go-gremlins exits 0 without a report when it finds no mutant,
		// when it is stopped, and when it cannot write the file.
		return result{}, fmt.Errorf("go-gremlins wrote no report: %w", err)
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		return result{}, fmt.Errorf("%s: %w", report, err)
	}
	r.target = t
	for i, f := range r.Files { // the lines as the copy has them, which is the tree the mutants were made of
		text, err := s.root.ReadFile(path.Join(t.dir, f.Name))
		if err != nil {
			return result{}, err
		}
		r.Files[i].lines = strings.Split(string(text), "\n")
	}
	return r, nil
}
