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

// TestTheREADMEsLambdaIsTheOneTheKitBuilds: the README's five-minute Lambda
// is pkg/idemtest/testdata/outside/main.go byte for byte, and each test it
// shows is in main_test.go as shown, so that what a newcomer copies is what
// make test builds as a module of its own and passes (idemtest's
// TestAModuleOfOnesOwnTestsItsLambdaWithTheKit).
func TestTheREADMEsLambdaIsTheOneTheKitBuilds(t *testing.T) {
	root := projectRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for rest := string(readme); ; {
		_, after, ok := strings.Cut(rest, "\n```go\n")
		if !ok {
			break
		}
		block, tail, _ := strings.Cut(after, "\n```\n")
		blocks, rest = append(blocks, block+"\n"), tail
	}
	dir := filepath.Join(root, "pkg", "idemtest", "testdata", "outside")
	main, err := os.ReadFile(filepath.Join(dir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile(filepath.Join(dir, "main_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 2 || blocks[0] != string(main) {
		t.Fatalf("the README's first Go block is not %s as it is (%d Go blocks)", filepath.Join(dir, "main.go"), len(blocks))
	}
	if !strings.Contains(blocks[1], "func Test") || !strings.Contains(string(test), blocks[1]) {
		t.Fatalf("the README's second Go block is not a part of %s as it is:\n%s", filepath.Join(dir, "main_test.go"), blocks[1])
	}
}

// TestTheTestingGuideNamesEveryExample: go doc prints no Examples, so
// docs/testing.md names each, under its package's heading, and only those
// that are there: every func Example in pkg/'s test files.
func TestTheTestingGuideNamesEveryExample(t *testing.T) {
	root := projectRoot(t)
	have := map[string][]string{} // package directory: its Examples
	example := regexp.MustCompile(`(?m)^func (Example\w*)\(`)
	err := filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testdata") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range example.FindAllStringSubmatch(string(b), -1) {
			have[filepath.ToSlash(dir)] = append(have[filepath.ToSlash(dir)], m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(guide), "\n## The Examples\n")
	if !ok {
		t.Fatal(`docs/testing.md has no "## The Examples" section`)
	}
	named := map[string][]string{}
	pkg := ""
	for _, line := range strings.Split(section, "\n") {
		if h, ok := strings.CutPrefix(line, "### `"); ok {
			pkg = strings.TrimSuffix(h, "`")
			continue
		}
		if m := regexp.MustCompile("^- `(Example\\w*)`").FindStringSubmatch(line); m != nil {
			named[pkg] = append(named[pkg], m[1])
		}
	}
	for dir, examples := range have {
		slices.Sort(examples)
		got := slices.Sorted(slices.Values(named[dir]))
		if !slices.Equal(got, examples) {
			t.Errorf("docs/testing.md names %v under `%s`, which has %v", got, dir, examples)
		}
	}
	for dir := range named {
		if _, ok := have[dir]; !ok {
			t.Errorf("docs/testing.md names Examples under `%s`, which has none", dir)
		}
	}
}
