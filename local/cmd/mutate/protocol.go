package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// runProtocol is the protocol subcommand: every mutant of the list (or
// those args name), one after another on one scratch copy, against one
// engine; 0 when each was killed or argued equivalent, 1 when one that is
// not lived or the runner failed (an entry whose text is not found exactly
// once, a mutant that does not compile, a kill that its test does not
// make again when run alone on the mutant, or one by a test that fails
// without the mutant too), 2 for bad flags.
func runProtocol(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("protocol", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listFile := fs.String("list", "local/mutate/protocol.txt", "the protocol mutants")
	out := fs.String("out", "bin/mutate/protocol.md", "the table (Markdown)")
	work := fs.String("work", "bin/mutate/protocol", "the scratch directory: the tree's copy")
	timeout := fs.Duration("timeout", 15*time.Minute, "go test -timeout, for each package's run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	mutants, err := selectMutants(*listFile, fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "mutate protocol:", err)
		return 2
	}
	p := protocolRun{mutants: mutants, testArgs: []string{"-timeout", timeout.String()}, stdout: stdout}
	if err := p.run(ctx, *work); err != nil {
		fmt.Fprintln(stderr, "mutate protocol:", err)
		return 1
	}
	if err := writeFile(*out, p.markdown()); err != nil {
		fmt.Fprintln(stderr, "mutate protocol:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n• the table: %s\n", p.closing(), *out)
	if wrong := p.wrong(); len(wrong) > 0 {
		fmt.Fprintf(stderr, "mutate protocol: %s\n", strings.Join(wrong, "\n"))
		return 1
	}
	return 0
}

// selectMutants reads the list and keeps the mutants names says (all
// without any).
func selectMutants(listFile string, names []string) ([]mutant, error) {
	f, err := os.Open(listFile)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	all, err := parseMutants(listFile, f)
	if err != nil || len(names) == 0 {
		return all, err
	}
	var ms []mutant
	for _, n := range names {
		i := slices.IndexFunc(all, func(m mutant) bool { return m.name == n })
		if i < 0 {
			return nil, fmt.Errorf("no mutant %q in %s", n, listFile)
		}
		ms = append(ms, all[i])
	}
	return ms, nil
}

// protocolRun is one run of the list and what each mutant came to.
type protocolRun struct {
	mutants  []mutant
	testArgs []string
	stdout   io.Writer
	outcomes []outcome
	elapsed  time.Duration
}

// outcome is what one mutant came to.
type outcome struct {
	m        mutant
	v        verdict
	ran      time.Duration // its tests' time in all
	spurious string        // the killing test's failure without the mutant
	// unrepeated is a kill that its test did not make again, run alone on
	// the mutant: a test that fails by chance, not a kill.
	unrepeated bool
}

// run checks every entry against the copy first, so that an entry whose
// text moved stops the run before any test does, then runs each mutant.
func (p *protocolRun) run(ctx context.Context, work string) error {
	start := time.Now()
	s, err := newScratch(ctx, work, p.stdout)
	if err != nil {
		return err
	}
	defer s.close()
	for _, m := range p.mutants {
		if _, err := m.mutated(s.root.ReadFile); err != nil {
			return err
		}
	}
	for i, m := range p.mutants {
		o, err := p.one(ctx, s, m)
		if err != nil {
			return fmt.Errorf("mutant %s: %w", m.name, err)
		}
		p.outcomes = append(p.outcomes, o)
		fmt.Fprintf(p.stdout, "• [%d/%d] %s: %s\n", i+1, len(p.mutants), m.name, o.progress())
	}
	p.elapsed = time.Since(start)
	return nil
}

// one applies m to the copy, runs its packages' tests one package after
// another until one fails, and puts the copy back; a kill is then checked
// on the copy as it was.
func (p *protocolRun) one(ctx context.Context, s *scratch, m mutant) (o outcome, err error) {
	o.m = m
	start := time.Now()
	restore, err := apply(s.root, m)
	if err != nil {
		return o, err
	}
	defer func() { err = errors.Join(err, restore()) }()
	for _, pkg := range m.kill {
		if o.v, err = goTest(ctx, s, pkg, p.testArgs, start); err != nil || o.v.failed() {
			break
		}
	}
	o.ran = time.Since(start)
	if err != nil || !o.v.failed() || o.v.build != "" {
		return o, err
	}
	again, err := goTest(ctx, s, "./"+o.v.pkg, p.killerArgs(o.v), time.Now())
	if err != nil {
		return o, err
	}
	if !again.failed() {
		o.unrepeated = true
		return o, nil
	}
	if err := restore(); err != nil {
		return o, err
	}
	o.spurious, err = p.confirm(ctx, s, o.v)
	return o, err
}

// controlRuns is how many times a kill's test runs on the copy without its
// mutant, where each run must pass: a test that fails now and then would
// otherwise be credited with a kill it made by chance.
const controlRuns = 3

// confirm runs what killed a mutant on the copy without it, controlRuns
// times (runs of their own, not -count, which runs an example once): what
// fails there too killed nothing. It returns that failure.
func (p *protocolRun) confirm(ctx context.Context, s *scratch, v verdict) (string, error) {
	for range controlRuns {
		again, err := goTest(ctx, s, "./"+v.pkg, p.killerArgs(v), time.Now())
		switch {
		case err != nil:
			return "", err
		case again.build != "":
			return again.build, nil
		case again.failed():
			return again.kill() + "\n" + again.output, nil
		}
	}
	return "", nil
}

// killerArgs are go test's flags for what killed a mutant: the test, or
// the tests that ran when the package failed outside one, or else the
// whole package.
func (p *protocolRun) killerArgs(v verdict) []string {
	names := v.running
	if v.test != "" {
		names = []string{v.test}
	}
	args := slices.Clone(p.testArgs)
	if len(names) > 0 {
		args = append(args, "-run", runPattern(names))
	}
	return args
}

// runPattern is go test's -run for the tests named, by their top level.
func runPattern(names []string) string {
	var tops []string
	for _, n := range names {
		top, _, _ := strings.Cut(n, "/")
		tops = append(tops, regexp.QuoteMeta(top))
	}
	return "^(" + strings.Join(slices.Compact(tops), "|") + ")$"
}

// apply writes m's files into the copy at root and returns what puts them
// back as they were; putting them back twice is harmless.
func apply(root *os.Root, m mutant) (restore func() error, err error) {
	files, err := m.mutated(root.ReadFile)
	if err != nil {
		return nil, err
	}
	return replace(root, files)
}

// replace writes files (name to text) into root and returns what puts
// them back as they were; putting them back twice is harmless.
func replace(root *os.Root, files map[string]string) (restore func() error, err error) {
	orig := map[string][]byte{}
	restore = func() error {
		var errs []error
		for file, b := range orig {
			errs = append(errs, root.WriteFile(file, b, 0o644))
		}
		return errors.Join(errs...)
	}
	for file, text := range files {
		if orig[file], err = root.ReadFile(file); err == nil {
			err = root.WriteFile(file, []byte(text), 0o644)
		}
		if err != nil {
			return nil, errors.Join(err, restore())
		}
	}
	return restore, nil
}
