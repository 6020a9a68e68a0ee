package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mutate makes each of go-gremlins' default mutants as its documentation
// tables them, at the operator's column, and refuses a column that holds
// no operator the mutator changes.
func TestMutateSwapsTheOperatorAtTheColumn(t *testing.T) {
	for _, c := range []struct {
		src  string
		col  int
		kind string
		want string
	}{
		{"\tif a <= b {\n", 7, "CONDITIONALS_BOUNDARY", "\tif a < b {\n"},
		{"\tif a < b {\n", 7, "CONDITIONALS_NEGATION", "\tif a >= b {\n"},
		{"\tif a > b && c > d {\n", 16, "CONDITIONALS_BOUNDARY", "\tif a > b && c >= d {\n"},
		{"\tx := a % b\n", 9, "ARITHMETIC_BASE", "\tx := a * b\n"},
		{"\ti++\n", 3, "INCREMENT_DECREMENT", "\ti--\n"},
		{"\tx := -y\n", 7, "INVERT_NEGATIVES", "\tx := +y\n"},
		{"\tx := a == b\n", 9, "CONDITIONALS_NEGATION", "\tx := a != b\n"},
	} {
		got, err := mutate("package p\n"+c.src, 2, c.col, c.kind)
		if err != nil || got != "package p\n"+c.want {
			t.Errorf("mutate(%q, col %d, %s) = %q, %v; want %q", c.src, c.col, c.kind, got, err, c.want)
		}
	}
	for _, c := range []struct {
		src  string
		col  int
		kind string
	}{
		{"\tif a <= b {\n", 6, "CONDITIONALS_BOUNDARY"}, // a space
		{"\tif a == b {\n", 7, "CONDITIONALS_BOUNDARY"}, // not the mutator's
		{"\tif a <= b {\n", 7, "INVERT_LOGICAL"},        // not a default mutator
	} {
		if got, err := mutate(c.src, 1, c.col, c.kind); err == nil {
			t.Errorf("mutate(%q, col %d, %s) = %q, want an error", c.src, c.col, c.kind, got)
		}
	}
}

// marked shows the one operator the mutant changes, so that an entry
// written from the report argues that mutant and no other of its line.
func TestMarkedNamesOneOperatorOfTheLine(t *testing.T) {
	line := "\tif a > b && c > d {"
	first, second := marked(line, 7), marked(line, 16)
	if first != "if a ⟦>⟧ b && c > d {" || second != "if a > b && c ⟦>⟧ d {" {
		t.Fatalf("marked = %q and %q", first, second)
	}
}

// An entry argues one living mutant: one that matches none (its mutant is
// killed now, or its line changed) and one that matches two (identical
// lines) are faults, and neither mutant of the identical lines is argued.
// A file the run did not mutate is not judged.
func TestAnEntryArguesOneLivingMutant(t *testing.T) {
	eq := writeEquivalents(t,
		"pkg/idem/a.go | CONDITIONALS_BOUNDARY | if x ⟦>⟧ 0 { | one",
		"pkg/idem/a.go | CONDITIONALS_BOUNDARY | if y ⟦>⟧ 0 { | stale",
		"pkg/idem/a.go | CONDITIONALS_BOUNDARY | if z ⟦>⟧ 0 { | twice",
		"pkg/idem/b.go | CONDITIONALS_BOUNDARY | if w ⟦>⟧ 0 { | not this run's",
	)
	var r result
	r.target = target{dir: "pkg/idem"}
	r.Files = append(r.Files, struct {
		Name      string      `json:"file_name"`
		Mutations []*mutation `json:"mutations"`
		lines     []string
	}{Name: "a.go", lines: []string{"\tif x > 0 {", "\tif z > 0 {", "\tif z > 0 {", "\tif x > 0 && v > 1 {"},
		Mutations: []*mutation{
			{Type: "CONDITIONALS_BOUNDARY", Status: "LIVED", Line: 1, Column: 7},
			{Type: "CONDITIONALS_BOUNDARY", Status: "LIVED", Line: 2, Column: 7},
			{Type: "CONDITIONALS_BOUNDARY", Status: "LIVED", Line: 3, Column: 7},
			{Type: "CONDITIONALS_BOUNDARY", Status: "LIVED", Line: 4, Column: 16},
		}})
	protocolFiles = append(protocolFiles, "a.go")
	t.Cleanup(func() { protocolFiles = protocolFiles[:len(protocolFiles)-1] })
	rep := newReport([]result{r}, eq, 0)
	un := strings.Join(rep.unargued(), "\n")
	for _, want := range []string{"a.go:2:7", "a.go:3:7", "a.go:4:16"} {
		if !strings.Contains(un, want) {
			t.Errorf("unargued() = %q, want %s in it", un, want)
		}
	}
	if strings.Contains(un, "a.go:1:7") {
		t.Errorf("unargued() = %q, want a.go:1:7 argued", un)
	}
	faults := strings.Join(rep.faults, "\n")
	if len(rep.faults) != 2 || !strings.Contains(faults, "if y ⟦>⟧ 0 {") || !strings.Contains(faults, "matches 2 mutants") {
		t.Errorf("faults = %q, want the stale entry and the one matching two", rep.faults)
	}
}

func writeEquivalents(t *testing.T, lines ...string) *equivalents {
	t.Helper()
	name := filepath.Join(t.TempDir(), "equivalent.txt")
	if err := os.WriteFile(name, []byte("# a comment\n\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return mustEquivalents(t, name)
}

func mustEquivalents(t *testing.T, name string) *equivalents {
	t.Helper()
	eq, err := readEquivalents(name)
	if err != nil {
		t.Fatal(err)
	}
	return eq
}

// An entry that does not mark its operator is refused: it would argue
// every operator of its line that the mutator changes.
func TestAnEntryWithoutItsOperatorMarkedIsRefused(t *testing.T) {
	name := filepath.Join(t.TempDir(), "equivalent.txt")
	if err := os.WriteFile(name, []byte("pkg/idem/a.go | CONDITIONALS_BOUNDARY | if x > 0 { | why\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readEquivalents(name); err == nil || !strings.Contains(err.Error(), "mark the operator") {
		t.Fatalf("err = %v, want the mark asked for", err)
	}
}

// TestTheEquivalentsStandOnTheTree: each entry names a protocol file, a
// line that stands in it exactly once, and an operator there that its
// mutator changes; a change to an argued line fails here, before a
// mutation run would.
func TestTheEquivalentsStandOnTheTree(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	eq := mustEquivalents(t, filepath.Join(root, "local", "mutate", "gremlins-equivalent.txt"))
	if len(eq.entries) == 0 {
		t.Fatal("no entry read")
	}
	for _, e := range eq.entries {
		if !isProtocol(e.file) {
			t.Errorf("line %d: %s is no protocol file: only theirs are argued", e.line, e.file)
		}
		before, rest, _ := strings.Cut(e.source, "⟦")
		op, after, _ := strings.Cut(rest, "⟧")
		if _, ok := swaps[e.kind][op]; !ok {
			t.Errorf("line %d: %s makes no mutant of %q", e.line, e.kind, op)
		}
		f, err := os.Open(filepath.Join(root, e.file))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for s := bufio.NewScanner(f); s.Scan(); {
			if strings.TrimSpace(s.Text()) == before+op+after {
				n++
			}
		}
		_ = f.Close()
		if n != 1 {
			t.Errorf("line %d: %q stands %d times in %s, want once", e.line, before+op+after, n, e.file)
		}
	}
}
