package docs_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layoutPath is a package's path in layout.md's table: a code span in a
// row's first cell.
var layoutPath = regexp.MustCompile("`([^`]+)`")

// layoutPackages are the packages layout.md's table names, relative to the
// module's root: every code span in the first cell of each row, a bare name
// (no slash) after a path being that path's sibling ("`local/cmd/run`,
// `demo`").
func layoutPackages(t *testing.T, root string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 3 {
			continue
		}
		prev := ""
		for _, m := range layoutPath.FindAllStringSubmatch(cells[1], -1) {
			p := m[1]
			if !strings.Contains(p, "/") && prev != "" {
				p = path.Join(path.Dir(prev), p)
			}
			named, prev = append(named, p), p
		}
	}
	return named
}

// modulePackages are the module's packages (go list ./...), relative to
// its root.
func modulePackages(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Module.Path}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		importPath, module, _ := strings.Cut(line, " ")
		rel := strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
		if rel == "" {
			rel = "."
		}
		pkgs = append(pkgs, rel)
	}
	return pkgs
}

// docs/layout.md is where a reader looks for the home of a change: it
// names every package of the module, and no package that is not one.
func TestLayoutNamesEveryPackageOfTheModule(t *testing.T) {
	root := projectRoot(t)
	named, pkgs := layoutPackages(t, root), modulePackages(t, root)
	for _, p := range pkgs {
		if !slices.Contains(named, p) {
			t.Errorf("docs/layout.md has no row for the package %s: add one saying what it is for", p)
		}
	}
	for _, n := range named {
		if !slices.Contains(pkgs, n) {
			t.Errorf("docs/layout.md names %s, which is not a package of the module (go list ./...): remove or rename its row", n)
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("go list ./... listed no package")
	}
}
