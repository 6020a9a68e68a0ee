package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goTestJSON runs go test -json over a module made of files, as make test
// runs it over this one, and returns what it printed.
func goTestJSON(t *testing.T, files map[string]string) []byte {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.26\n"
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, _ := cmd.CombinedOutput() // fails when a test does, which is the point
	return out
}

func summarise(in []byte, planned ...string) (string, int) {
	var out bytes.Buffer
	code := run(bytes.NewReader(in), &out, time.Now, planned)
	return out.String(), code
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestSummaryShowsWhatFailedAndEndsWithTheCount runs real go test -json
// output through the summary: a package with a passing, a failing (with
// its message), a skipped and a subtest, a package that does not build, a
// package without tests, and a line that is not an event. The failure's
// message and the build error are shown, the plain line passes through,
// the closing line counts every test, and the exit is 1.
func TestSummaryShowsWhatFailedAndEndsWithTheCount(t *testing.T) {
	in := goTestJSON(t, map[string]string{
		"a/a_test.go": `package a
import "testing"
func TestPasses(t *testing.T) {}
func TestFails(t *testing.T) { t.Error("the answer was 41, want 42") }
func TestSkips(t *testing.T) { t.Skip("not here") }
func TestParent(t *testing.T) { t.Run("child", func(t *testing.T) {}) }
`,
		"b/b_test.go": `package b
import "testing"
func TestBroken(t *testing.T) { undefinedCall() }
`,
		"c/c.go": "package c\n",
	})
	in = append([]byte("• fuzz FuzzSomething for 10x\n"), in...)
	out, code := summarise(in)
	for _, want := range []string{
		"• fuzz FuzzSomething for 10x",
		"FAIL  example.com/m/a",
		"--- FAIL: TestFails",
		"the answer was 41, want 42",
		"FAIL  example.com/m/b",
		"undefined: undefinedCall",
		"2 failed (example.com/m/a, example.com/m/b)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not here") || strings.Contains(out, "=== RUN") {
		t.Errorf("the summary shows a passing or skipped test's output:\n%s", out)
	}
	if got, want := lastLine(out), "3 passed, 1 failed, 1 skipped"; got != want || code != 1 {
		t.Errorf("closing line %q, exit %d; want %q, exit 1\n%s", got, code, want, out)
	}
}

// TestSummaryOfAPassingRunExitsZero: a passing package's line names its
// test when it ran one (a fuzz run, or one skipped), the exit is 0, and no
// input at all (nothing ran) is a failure.
func TestSummaryOfAPassingRunExitsZero(t *testing.T) {
	in := goTestJSON(t, map[string]string{
		"a/a_test.go": "package a\nimport \"testing\"\nfunc FuzzOne(f *testing.F) { f.Fuzz(func(t *testing.T, b []byte) {}) }\n",
		"b/b_test.go": "package b\nimport \"testing\"\nfunc TestElsewhere(t *testing.T) { t.Skip(\"needs what is not here\") }\n",
	})
	out, code := summarise(in)
	if !strings.Contains(out, "ok    example.com/m/a") || !strings.Contains(out, "FuzzOne") || !strings.Contains(out, "TestElsewhere (skipped)") || lastLine(out) != "1 passed, 0 failed, 1 skipped" || code != 0 {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if out, code := summarise(nil); code != 1 || lastLine(out) != "0 passed, 0 failed" {
		t.Errorf("no input: exit %d:\n%s", code, out)
	}
}

// TestFuzzTargetsThatDidNotRunAreNamed: given the fuzz targets the run
// means to run, the summary names those that never started, and the
// closing line counts them: all of them when a test failed first (make test
// then skips the fuzz runs), the rest when one fuzz run failed (make fuzz
// stops at it). A run of every planned target says nothing of the kind.
func TestFuzzTargetsThatDidNotRunAreNamed(t *testing.T) {
	failing := goTestJSON(t, map[string]string{
		"a/a_test.go": "package a\nimport \"testing\"\nfunc TestFails(t *testing.T) { t.Error(\"no\") }\n",
	})
	passing := goTestJSON(t, map[string]string{
		"a/a_test.go": "package a\nimport \"testing\"\nfunc TestPasses(t *testing.T) {}\n",
	})
	planned := []string{"internal/x:FuzzOne", "internal/y:FuzzTwo"}
	cases := []struct {
		name, notRun, closing string
		in                    []byte
		code                  int
	}{
		{"a test failed", "not run (a failure came first, and make test stops at it): FuzzOne, FuzzTwo", "0 passed, 1 failed; not run: 2 fuzz targets", failing, 1},
		{"the first fuzz run failed", "not run (a failure came first, and make test stops at it): FuzzTwo", "1 passed, 1 failed; not run: 1 fuzz target",
			append(append(append([]byte{}, passing...), "• fuzz FuzzOne for 10x\n"...), failing...), 1},
		{"every one ran", "", "3 passed, 0 failed",
			append(append(append(append(append([]byte{}, passing...), "• fuzz FuzzOne for 10x\n"...), passing...), "• fuzz FuzzTwo for 10x\n"...), passing...), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, code := summarise(tc.in, planned...)
			if tc.notRun != "" && !strings.Contains(out, tc.notRun) || tc.notRun == "" && strings.Contains(out, "not run") {
				t.Errorf("want %q said:\n%s", tc.notRun, out)
			}
			if lastLine(out) != tc.closing || code != tc.code {
				t.Errorf("closing line %q, exit %d; want %q, exit %d\n%s", lastLine(out), code, tc.closing, tc.code, out)
			}
		})
	}
}

// TestTheMakefileTellsTheSummaryEveryFuzzTarget: make test hands testsum
// the fuzz targets of make fuzz's loop (FUZZ_TARGETS, read from the loop),
// every one of the loop's and nothing else.
func TestTheMakefileTellsTheSummaryEveryFuzzTarget(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	out, err := exec.Command("make", "-s", "--no-print-directory", "-C", root, "print-fuzz-targets").CombinedOutput()
	if err != nil {
		t.Fatalf("make print-fuzz-targets: %v\n%s", err, out)
	}
	listed := strings.Fields(string(out))
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	// What the loop runs: every pkg:FuzzX between "fuzz:" and its "done".
	loop := string(mk)[strings.Index(string(mk), "\nfuzz:"):]
	loop = loop[:strings.Index(loop, "done")]
	var want []string
	for _, f := range strings.Fields(strings.NewReplacer("\\", " ", ";", " ").Replace(loop)) {
		if strings.Contains(f, ":Fuzz") {
			want = append(want, f)
		}
	}
	if len(want) == 0 || strings.Join(listed, " ") != strings.Join(want, " ") {
		t.Fatalf("FUZZ_TARGETS is %v; make fuzz's loop runs %v", listed, want)
	}
}
