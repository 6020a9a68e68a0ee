package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// guaranteeLine is a line of RELIABILITY.md that states a guarantee:
	// a list item opened by its anchor.
	guaranteeLine = regexp.MustCompile(`^- <a id="([a-z0-9-]+)"></a>`)
	// citedTest is a test named in inline code: TestX, FuzzX, ExampleX or
	// BenchmarkX, bare or qualified by its package's directory
	// (pkg/idem.TestX), a subtest's path after it ignored.
	citedTest = regexp.MustCompile("`(?:([a-z][\\w./-]*)\\.)?((?:Test|Fuzz|Example|Benchmark)[A-Za-z0-9_]*)(?:/[^`]*)?`")
	testFunc  = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Example|Benchmark)[A-Za-z0-9_]*)\(`)
	// history is how a document tells what a test once printed on broken
	// code: that is the commit message's, not the guarantee's.
	history = regexp.MustCompile(`(?i)shown red|before the fix`)
)

// A guarantee is read in a minute: the document stays small, each line
// short enough to read raw.
const (
	maxReliabilityBytes = 40_000
	maxLineBytes        = 400
)

// testFuncs are the repository's test functions (Test, Fuzz, Example and
// Benchmark in its *_test.go files, testdata's modules included), each with
// the directories, relative to root, that define one of that name.
func testFuncs(t *testing.T, root string) map[string][]string {
	t.Helper()
	funcs := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "bin" || rel == ".aws-sam" || d.Name() == "node_modules" || (rel != "." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(funcs[m[1]], dir) {
				funcs[m[1]] = append(funcs[m[1]], dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return funcs
}

// TestReliabilityCitesTestsThatExist holds RELIABILITY.md to the code, as
// api/ holds the API: every test it names (in inline code, anywhere in
// the document) is a func of that name in a *_test.go file, in the named
// package's directory when qualified (pkg/idem.TestX), and in one
// directory only when bare; and every guarantee line names at least one.
// A renamed or deleted test fails it, as does a guarantee that no test
// holds. It reports every problem at once, so that one run lists every
// name to fix; and it holds the document to its size, its lines to 400
// characters, and its text to no history of how a test was shown red.
func TestReliabilityCitesTestsThatExist(t *testing.T) {
	root := projectRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "RELIABILITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	funcs := testFuncs(t, root)
	var missing, ambiguous, untested []string
	guarantees, cited := 0, 0
	seen := map[string]bool{}
	if len(text) > maxReliabilityBytes {
		t.Errorf("RELIABILITY.md is %d bytes, over %d: say it shorter, or move a reason to DESIGN.md", len(text), maxReliabilityBytes)
	}
	for i, line := range strings.Split(string(text), "\n") {
		if len(line) > maxLineBytes {
			t.Errorf("RELIABILITY.md:%d: %d characters, over %d: one sentence, what is injected, the tests", i+1, len(line), maxLineBytes)
		}
		if m := history.FindString(line); m != "" {
			t.Errorf("RELIABILITY.md:%d: %q is history, which belongs in the commit that showed it", i+1, m)
		}
		g := guaranteeLine.FindStringSubmatch(line)
		names := citedTest.FindAllStringSubmatch(line, -1)
		if g != nil {
			guarantees++
			if len(names) == 0 {
				untested = append(untested, g[1])
				t.Errorf("RELIABILITY.md:%d: guarantee #%s names no test", i+1, g[1])
			}
		}
		for _, m := range names {
			dir, name := m[1], m[2]
			cited++
			dirs := funcs[name]
			switch {
			case dir != "" && !slices.Contains(dirs, dir):
				if !seen[dir+"."+name] {
					missing = append(missing, dir+"."+name)
				}
				seen[dir+"."+name] = true
				t.Errorf("RELIABILITY.md:%d: no func %s in %s/*_test.go (found in %v)", i+1, name, dir, dirs)
			case len(dirs) == 0:
				if !seen[name] {
					missing = append(missing, name)
				}
				seen[name] = true
				t.Errorf("RELIABILITY.md:%d: no func %s in any *_test.go", i+1, name)
			case dir == "" && len(dirs) > 1:
				if !seen[name] {
					ambiguous = append(ambiguous, name)
				}
				seen[name] = true
				t.Errorf("RELIABILITY.md:%d: %s is defined in %v: qualify it as dir.%s", i+1, name, dirs, name)
			}
		}
	}
	if guarantees == 0 {
		t.Fatal(`RELIABILITY.md has no guarantee line (- <a id="…"></a> …)`)
	}
	// The summary: every name to fix, on one line each.
	if len(missing) > 0 {
		t.Errorf("RELIABILITY.md names %d tests that do not exist: %s", len(missing), strings.Join(missing, " "))
	}
	if len(ambiguous) > 0 {
		t.Errorf("RELIABILITY.md names %d tests defined in several packages, unqualified: %s", len(ambiguous), strings.Join(ambiguous, " "))
	}
	if len(untested) > 0 {
		t.Errorf("RELIABILITY.md has %d guarantees that name no test: %s", len(untested), strings.Join(untested, " "))
	}
	t.Logf("%d guarantees, %d tests cited", guarantees, cited)
}
