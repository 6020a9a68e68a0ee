package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/dynamo"
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
		// gofmt writes these tight; the swap must not make another token
		{"\tx := s[a+-1:]\n", 10, "ARITHMETIC_BASE", "\tx := s[a- -1:]\n"},
		{"\tx := s[a-+1:]\n", 10, "ARITHMETIC_BASE", "\tx := s[a+ +1:]\n"},
		{"\tx := s[a**p:]\n", 10, "ARITHMETIC_BASE", "\tx := s[a/ *p:]\n"},
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

// The runner pins go-gremlins' mutators to those it can mark and apply:
// each of swaps on, every other off.
func TestTheMutatorsAreTheOnesTheRunnerKnows(t *testing.T) {
	flags := strings.Join(mutatorFlags(), " ")
	for kind := range swaps {
		if !strings.Contains(flags, "--"+strings.ToLower(strings.ReplaceAll(kind, "_", "-"))+"=true") {
			t.Errorf("%s not switched on: %s", kind, flags)
		}
	}
	if strings.Count(flags, "=true") != len(swaps) || strings.Count(flags, "=false") != 6 {
		t.Errorf("flags %s: want the %d of swaps on and go-gremlins' 6 others off", flags, len(swaps))
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
// killed now, or its line changed) and one whose line stands twice are
// faults, and neither mutant of the identical lines is argued, even when
// only one lived: its reason may have been written for the other. A file
// the run did not mutate is not judged.
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
			{Type: "CONDITIONALS_BOUNDARY", Status: "KILLED", Line: 3, Column: 7},
			{Type: "CONDITIONALS_BOUNDARY", Status: "LIVED", Line: 4, Column: 16},
		}})
	protocolFiles = append(protocolFiles, "a.go")
	t.Cleanup(func() { protocolFiles = protocolFiles[:len(protocolFiles)-1] })
	rep := newReport([]result{r}, eq, 0)
	un := strings.Join(rep.unargued(), "\n")
	for _, want := range []string{"a.go:2:7", "a.go:4:16"} {
		if !strings.Contains(un, want) {
			t.Errorf("unargued() = %q, want %s in it", un, want)
		}
	}
	if strings.Contains(un, "a.go:1:7") {
		t.Errorf("unargued() = %q, want a.go:1:7 argued", un)
	}
	faults := strings.Join(rep.faults, "\n")
	if len(rep.faults) != 2 || !strings.Contains(faults, "if y ⟦>⟧ 0 {") || !strings.Contains(faults, "made 2 times") {
		t.Errorf("faults = %q, want the stale entry and the one whose line stands twice", rep.faults)
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

// retest decides a protocol file's unsettled mutants by the runner's own
// runs, each in a clone of the copy, and leaves the copy as it was: on a
// module of its own, one mutant that its test kills (counted killed, by
// that test), one no test sees, though a test fails by chance on its first
// run (counted lived, to be argued: one failure is no kill), and one that
// does not compile (not viable: go-gremlins builds no mutant it finds not
// covered).
func TestRetestDecidesByTheRunnersOwnRuns(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	once := filepath.Join(t.TempDir(), "failed-once")
	claim := "package idem\n\nfunc Pos(x int) bool { return x > 0 }\n\nfunc Big(x int) bool { return x > 100 }\n\nconst cond = \"a\" + \"b\"\n"
	files := map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.24\n",
		"pkg/idem/claim.go": claim,
		"pkg/idem/claim_test.go": "package idem\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestPos(t *testing.T) {\n\tif !Pos(1) || Pos(0) {\n\t\tt.Fatal(\"Pos\")\n\t}\n\tif !Big(500) {\n\t\tt.Fatal(\"Big\")\n\t}\n}\n\n" +
			"func TestFailsOnce(t *testing.T) {\n\tif _, err := os.Stat(" + strconv.Quote(once) + "); err != nil {\n\t\t_ = os.WriteFile(" + strconv.Quote(once) + ", nil, 0o644)\n\t\tt.Fatal(\"by chance\")\n\t}\n}\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := &scratch{src: src, root: root, module: "example.com/m", engine: &dynamo.Engine{Endpoint: "http://127.0.0.1:1"}}
	var r result
	r.target = target{dir: "pkg/idem"}
	pos := &mutation{Type: "CONDITIONALS_BOUNDARY", Status: "TIMED OUT", Line: 3, Column: 33}
	big := &mutation{Type: "CONDITIONALS_BOUNDARY", Status: "NOT COVERED", Line: 5, Column: 33}
	str := &mutation{Type: "ARITHMETIC_BASE", Status: "NOT COVERED", Line: 7, Column: 18}
	r.Files = append(r.Files, struct {
		Name      string      `json:"file_name"`
		Mutations []*mutation `json:"mutations"`
		lines     []string
	}{Name: "claim.go", Mutations: []*mutation{pos, big, str}, lines: strings.Split(claim, "\n")})
	c := gremlinsConfig{eq: &equivalents{}, workers: 2, again: 2 * time.Minute, stdout: io.Discard}
	if err := retest(context.Background(), c, s, r); err != nil {
		t.Fatal(err)
	}
	if pos.Status != "KILLED" || !strings.Contains(pos.again, "killed twice by pkg/idem TestPos") {
		t.Errorf("the mutant TestPos sees: %s, %q; want killed twice by TestPos", pos.Status, pos.again)
	}
	if big.Status != "LIVED" || !strings.HasPrefix(big.again, "not covered in go-gremlins") {
		t.Errorf("the mutant no test sees: %s, %q; want lived, once not covered", big.Status, big.again)
	}
	if str.Status != "NOT VIABLE" {
		t.Errorf("a string constant's + made -: %s, %q; want not viable", str.Status, str.again)
	}
	if b, err := os.ReadFile(filepath.Join(src, "pkg/idem/claim.go")); err != nil || string(b) != claim {
		t.Errorf("the copy's claim.go after: %q, %v; want it as it was", b, err)
	}
}
