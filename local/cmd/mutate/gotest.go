package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// verdict is what one package's go test -json run says of a mutant.
type verdict struct {
	pkg  string        // the package of the first failure
	test string        // the first test that failed; "" when the package failed without one
	at   time.Duration // when that failure was read, from the clock's start
	// build is the output of a build that failed (the mutant's, or a test
	// file's): no kill, the entry is wrong.
	build string
	// running are the tests still running when the package failed
	// without a failing test (an example's log.Fatal, a timeout, TestMain).
	running []string
	// output is the failing test's last lines, or the package's when it
	// failed without one: why it failed.
	output string
}

// tailLines is how much of a package's output a failure outside any test
// keeps: its last lines say why.
const tailLines = 20

func (v verdict) failed() bool { return v.pkg != "" || v.build != "" }

// kill names the first failure for a reader: the package, then the test
// (or what was running when the package failed without one).
func (v verdict) kill() string {
	switch {
	case v.test != "":
		return v.pkg + " " + v.test
	case len(v.running) > 0:
		return v.pkg + " (the package failed while " + strings.Join(v.running, ", ") + " ran)"
	}
	return v.pkg + " (the package failed outside any test)"
}

// readVerdict reads go test -json from r to its end and returns the first
// failure in it, timed by elapsed as it is read. Lines that are not events
// are left out; module trims the module's path off package names.
func readVerdict(r io.Reader, module string, elapsed func() time.Duration) (verdict, error) {
	var v verdict
	running := map[string][]string{} // by package, in the order they started
	tails := map[string][]string{}   // by package, and by package and test: the last output lines
	builds := map[string]*strings.Builder{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), 16<<20) // a test's output line may be long
	for s.Scan() {
		var e struct{ Action, Package, Test, Output, ImportPath, FailedBuild string }
		if !bytes.HasPrefix(s.Bytes(), []byte("{")) || json.Unmarshal(s.Bytes(), &e) != nil {
			continue
		}
		pkg := strings.TrimPrefix(strings.TrimPrefix(e.Package, module), "/")
		switch {
		case e.Action == "build-output":
			if builds[e.ImportPath] == nil {
				builds[e.ImportPath] = &strings.Builder{}
			}
			builds[e.ImportPath].WriteString(e.Output)
		case e.Action == "output":
			keepTail(tails, pkg, e.Output)
			keepTail(tails, pkg+"\x00"+e.Test, e.Output)
		case e.Action == "run" && e.Test != "":
			running[pkg] = append(running[pkg], e.Test)
		case e.Test != "" && (e.Action == "pass" || e.Action == "skip" || e.Action == "fail"):
			running[pkg] = slices.DeleteFunc(running[pkg], func(t string) bool { return t == e.Test })
			if e.Action == "fail" && !v.failed() {
				v.pkg, v.test, v.at, v.output = pkg, e.Test, elapsed(), strings.Join(tails[pkg+"\x00"+e.Test], "")
			}
			delete(tails, pkg+"\x00"+e.Test)
		case e.Action == "fail" && e.FailedBuild != "":
			v.build = buildOutput(builds, e.FailedBuild)
		case e.Action == "fail" && !v.failed():
			v.pkg, v.at, v.running, v.output = pkg, elapsed(), running[pkg], strings.Join(tails[pkg], "")
		}
	}
	return v, s.Err()
}

func keepTail(tails map[string][]string, key, line string) {
	tails[key] = append(tails[key], line)
	tails[key] = tails[key][max(0, len(tails[key])-tailLines):]
}

// why is the gist of the failure's output: its lines but go test's own
// (=== RUN, --- FAIL), the last few.
func (v verdict) why() []string {
	var lines []string
	for _, l := range strings.Split(v.output, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") {
			lines = append(lines, l)
		}
	}
	return lines[max(0, len(lines)-whyLines):]
}

// whyLines is how many lines of a failure the run prints.
const whyLines = 4

func buildOutput(builds map[string]*strings.Builder, path string) string {
	if b := builds[path]; b != nil && b.Len() > 0 {
		return b.String()
	}
	return path + " failed to build"
}

// goTest runs pkg's tests once in the copy, on the engine emptied (unless
// the copy shares it), stopping at the first failing test (-failfast),
// and returns its verdict, timed from start. An error is the runner's: go
// test failed with no test or build failing (a package that does not
// exist, say).
func goTest(ctx context.Context, s *scratch, pkg string, args []string, start time.Time) (verdict, error) {
	if err := s.empty(ctx); err != nil {
		return verdict{}, err
	}
	cmd := s.command(ctx, append(append([]string{"test", "-json", "-count=1", "-failfast"}, args...), pkg)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return verdict{}, err
	}
	if err := cmd.Start(); err != nil {
		return verdict{}, err
	}
	v, rerr := readVerdict(out, s.module, func() time.Duration { return time.Since(start) })
	werr := cmd.Wait()
	switch {
	case rerr != nil:
		return v, rerr
	case v.build == "" && v.pkg == "" && werr != nil:
		return v, fmt.Errorf("go test %s: %w: %s", pkg, werr, strings.TrimSpace(stderr.String()))
	case v.build != "" && stderr.Len() > 0:
		v.build += stderr.String()
	}
	return v, nil
}
