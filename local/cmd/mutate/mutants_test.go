package main

import (
	"go/format"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const sampleList = `# a comment
mutant first-one
guarantee: the fence holds
kill: ./pkg/a ./pkg/b
file: pkg/a/a.go
-	x := 1
-
-	y := 2
+	x := 2

# removes a line, then edits another file
mutant second
guarantee: the lapse holds
equivalent: nothing can tell
kill: ./pkg/b
file: pkg/b/b.go
-		return err
file: pkg/a/a.go
-	x := 2
+	x := 3
+	z := 4
`

func TestParseReadsEveryFieldAndDiffLine(t *testing.T) {
	got, err := parseMutants("list", strings.NewReader(sampleList))
	if err != nil {
		t.Fatal(err)
	}
	want := []mutant{
		{name: "first-one", guarantee: "the fence holds", kill: []string{"./pkg/a", "./pkg/b"}, line: 2,
			edits: []edit{{file: "pkg/a/a.go", old: "\tx := 1\n\n\ty := 2", new: "\tx := 2"}}},
		{name: "second", guarantee: "the lapse holds", equivalent: "nothing can tell", kill: []string{"./pkg/b"}, line: 12,
			edits: []edit{{file: "pkg/b/b.go", old: "\t\treturn err"}, {file: "pkg/a/a.go", old: "\tx := 2", new: "\tx := 3\n\tz := 4"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseRefusesAnEntryItCannotRun(t *testing.T) {
	const ok = "guarantee: g\nkill: ./p\nfile: f.go\n-a\n+b\n"
	cases := []struct{ name, list, want string }{
		{"no guarantee", "mutant m\nkill: ./p\nfile: f.go\n-a\n", "list:1: mutant m: no guarantee"},
		{"no kill", "mutant m\nguarantee: g\nfile: f.go\n-a\n", "no kill: line"},
		{"no file block", "mutant m\nguarantee: g\nkill: ./p\n", "no file: block"},
		{"no text to replace", "mutant m\nguarantee: g\nkill: ./p\nfile: f.go\n+b\n", "f.go: no text to replace"},
		{"a - after the +", "mutant m\nguarantee: g\nkill: ./p\nfile: f.go\n-a\n+b\n-c\n", "list:7: a - line after the + lines of f.go"},
		{"an unknown key", "mutant m\nowner: g\n", `list:2: unknown key "owner"`},
		{"a key without a value", "mutant m\nkill:\n", "list:2: want key: value"},
		{"a diff line outside a file block", "mutant m\n-a\n", "list:2: want key: value"},
		{"a line before the first mutant", "guarantee: g\n", "before the first mutant line"},
		{"a name taken", "mutant m\n" + ok + "mutant m\n" + ok, "list:7: mutant m: the name is taken by the entry at line 1"},
		{"a name with a space", "mutant M x\n" + ok, "a name is lower case letters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseMutants("list", strings.NewReader(tc.list))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one that says %q", err, tc.want)
			}
		})
	}
}

func TestMutatedWantsEachTextExactlyOnce(t *testing.T) {
	files := map[string]string{"a.go": "x := 1\ny := 1\nx := 1\n", "b.go": "return err\n"}
	read := func(f string) ([]byte, error) {
		text, ok := files[f]
		if !ok {
			return nil, os.ErrNotExist
		}
		return []byte(text), nil
	}
	cases := []struct {
		name  string
		edits []edit
		want  string // an error that says it; "" for none
	}{
		{"found once", []edit{{file: "b.go", old: "return err", new: "return nil"}}, ""},
		{"found twice", []edit{{file: "a.go", old: "x := 1", new: "x := 2"}}, "a.go: the text to replace stands 2 times, want exactly once"},
		{"not found", []edit{{file: "b.go", old: "return nil"}}, "b.go: the text to replace stands 0 times"},
		{"once only after the edit before it", []edit{{file: "a.go", old: "x := 1\ny", new: "y"}, {file: "a.go", old: "x := 1", new: "x := 3"}}, ""},
		{"a file that is not there", []edit{{file: "c.go", old: "x"}}, "mutant m: file does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mutant{name: "m", edits: tc.edits}.mutated(read)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	got, _ := mutant{edits: []edit{{file: "a.go", old: "x := 1\ny", new: "y"}, {file: "a.go", old: "x := 1", new: "x := 3"}}}.mutated(read)
	if want := map[string]string{"a.go": "y := 1\nx := 3\n"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("mutated %q, want %q", got, want)
	}
}

func TestApplyChangesTheCopyAndRestorePutsItBack(t *testing.T) {
	root := t.TempDir()
	const orig = "package a\n\nfunc f() int { return 1 }\n"
	if err := os.WriteFile(filepath.Join(root, "a.go"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	restore, err := apply(r, mutant{edits: []edit{{file: "a.go", old: "return 1", new: "return 2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.go")); !strings.Contains(string(b), "return 2") {
		t.Fatalf("applied: %q", b)
	}
	for range 2 { // twice, as a run does after a kill
		if err := restore(); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.go")); string(b) != orig {
		t.Fatalf("restored: %q", b)
	}
	if _, err := apply(r, mutant{edits: []edit{{file: "a.go", old: "return 3"}}}); err == nil {
		t.Fatal("applied a mutant whose text is not there")
	}
}

// TestTheProtocolListStandsOnTheTree: every entry of the list parses, its
// every text stands exactly once in the checkout, and its packages exist;
// a change to a line a mutant names fails here, so that the list follows
// the code. Each mutant leaves its files as gofmt would: the copy, under
// bin/, then never trips the checkout's gofmt -l . while a run is on.
func TestTheProtocolListStandsOnTheTree(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	f, err := os.Open(filepath.Join(root, "local", "mutate", "protocol.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mutants, err := parseMutants("protocol.txt", f)
	if err != nil {
		t.Fatal(err)
	}
	read := func(file string) ([]byte, error) { return os.ReadFile(filepath.Join(root, file)) }
	for _, m := range mutants {
		files, err := m.mutated(read)
		if err != nil {
			t.Error(err)
		}
		for file, text := range files {
			if b, err := format.Source([]byte(text)); err != nil || string(b) != text {
				t.Errorf("mutant %s leaves %s unlike gofmt's (%v)", m.name, file, err)
			}
		}
		for _, pkg := range m.kill {
			if info, err := os.Stat(filepath.Join(root, pkg)); err != nil || !info.IsDir() {
				t.Errorf("mutant %s: kill: %s is no package directory", m.name, pkg)
			}
		}
	}
}
