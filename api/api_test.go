// Package api holds the public API of the module's library packages, one
// file per package, as Go's own api/ directory holds the standard
// library's: every exported identifier with its signature, a line each.
// TestAPI fails when the code and a file differ, so that an API change is
// a diff someone reviews (and a line in CHANGELOG.md), never a side effect.
//
//	go test ./api -update   # rewrite the files from the code, then review the diff
//
// The lines are read from the compiler's export data (go list -export), with
// go/types from the standard library: no dependency, and the types are the
// compiler's, aliases, generics and promoted methods included.
// golang.org/x/exp/apidiff would say whether a change is compatible, but it
// compares two builds of a package, not a build with a reviewed text, and
// it is an unversioned module; a text file is what a reviewer reads in a
// diff.
package api

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the API files from the code")

// public are the module's packages that others may import, and their files.
var public = map[string]string{
	"github.com/idemkeys/idem/pkg/idem":                 "idem.txt",
	"github.com/idemkeys/idem/pkg/idem/idemlambda":      "idemlambda.txt",
	"github.com/idemkeys/idem/pkg/idem/idemhttp":        "idemhttp.txt",
	"github.com/idemkeys/idem/pkg/idem/idemotel":        "idemotel.txt",
	"github.com/idemkeys/idem/pkg/idemtest":             "idemtest.txt",
	"github.com/idemkeys/idem/pkg/idemtest/dynamolocal": "dynamolocal.txt",
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy":  "faultproxy.txt",
	"github.com/idemkeys/idem/pkg/idemclient":           "idemclient.txt",
}

func TestAPI(t *testing.T) {
	exports := exportData(t)
	for _, path := range keys(public) {
		file := public[path]
		t.Run(file, func(t *testing.T) {
			got := strings.Join(describe(t, exports, path), "\n") + "\n"
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v: write it with go test ./api -update", err)
			}
			if added, removed := diff(string(want), got); len(added)+len(removed) > 0 {
				t.Errorf("the public API of %s is not api/%s:%s%s\n"+
					"If the change is meant: go test ./api -update, review the diff, and add a line to CHANGELOG.md.",
					path, file, listed("in the code, not in the file", added), listed("in the file, not in the code", removed))
			}
		})
	}
}

// TestEveryPublicPackageHasAFile holds the list above to the repository: every
// file in api/ is a package's, and every package under pkg/ that is not
// internal is in the list.
func TestEveryPublicPackageHasAFile(t *testing.T) {
	out, err := exec.Command("go", "list", "../pkg/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "/internal") || strings.HasSuffix(p, "/model") {
			continue
		}
		if _, ok := public[p]; !ok {
			t.Errorf("%s is importable but has no API file: add it to public in api_test.go", p)
		}
	}
	files, _ := filepath.Glob("*.txt")
	for _, f := range files {
		if !slices.Contains(values(public), f) {
			t.Errorf("api/%s names no package of the list", f)
		}
	}
}

func values(m map[string]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

// exportData builds the public packages and returns the export data file of
// each package they depend on, by import path.
func exportData(t *testing.T) map[string]string {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, keys(public)...)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	files := map[string]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		files[p.ImportPath] = p.Export
	}
	return files
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// describe is the sorted API lines of the package at path.
func describe(t *testing.T, exports map[string]string, path string) []string {
	t.Helper()
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(p string) (io.ReadCloser, error) {
		f, ok := exports[p]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", p)
		}
		return os.Open(f)
	})
	pkg, err := imp.Import(path)
	if err != nil {
		t.Fatal(err)
	}
	w := writer{pkg: pkg, prefix: "pkg " + path + ", "}
	for _, name := range pkg.Scope().Names() {
		if obj := pkg.Scope().Lookup(name); obj.Exported() {
			w.object(obj)
		}
	}
	slices.Sort(w.lines)
	return slices.Compact(w.lines)
}

type writer struct {
	pkg    *types.Package
	prefix string
	lines  []string
}

func (w *writer) emit(format string, args ...any) {
	w.lines = append(w.lines, w.prefix+fmt.Sprintf(format, args...))
}

// qualifier names other packages by their name, as source does, and this
// one not at all.
func (w *writer) qualifier(p *types.Package) string {
	if p == w.pkg {
		return ""
	}
	return p.Name()
}

// typ is t as source spells it, but for the names of a function type's
// parameters, which are not part of the API.
func (w *writer) typ(t types.Type) string {
	switch t := t.(type) {
	case *types.Signature:
		return "func" + w.signature(t)
	case *types.Pointer:
		return "*" + w.typ(t.Elem())
	case *types.Slice:
		return "[]" + w.typ(t.Elem())
	case *types.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), w.typ(t.Elem()))
	case *types.Map:
		return "map[" + w.typ(t.Key()) + "]" + w.typ(t.Elem())
	}
	return types.TypeString(t, w.qualifier)
}

func (w *writer) object(obj types.Object) {
	switch o := obj.(type) {
	case *types.Const:
		w.emit("const %s %s", o.Name(), w.typ(o.Type()))
		w.emit("const %s = %s", o.Name(), o.Val().ExactString())
	case *types.Var:
		w.emit("var %s %s", o.Name(), w.typ(o.Type()))
	case *types.Func:
		sig := o.Type().(*types.Signature)
		w.emit("func %s%s%s", o.Name(), w.typeParams(sig.TypeParams()), w.signature(sig))
	case *types.TypeName:
		w.typeName(o)
	}
}

func (w *writer) typeName(o *types.TypeName) {
	if o.IsAlias() {
		w.emit("type %s = %s", o.Name(), w.typ(types.Unalias(o.Type())))
		return
	}
	named := o.Type().(*types.Named)
	head := o.Name() + w.typeParams(named.TypeParams())
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.emit("type %s struct", head)
		for i := range u.NumFields() {
			if f := u.Field(i); f.Exported() {
				if f.Embedded() {
					w.emit("type %s struct, embedded %s", head, w.typ(f.Type()))
				} else {
					w.emit("type %s struct, %s %s", head, f.Name(), w.typ(f.Type()))
				}
			}
		}
	case *types.Interface:
		var names []string
		for i := range u.NumMethods() {
			if m := u.Method(i); m.Exported() {
				names = append(names, m.Name())
				w.emit("type %s interface, %s%s", head, m.Name(), w.signature(m.Type().(*types.Signature)))
			} else {
				names = append(names, "unexported methods")
			}
		}
		w.emit("type %s interface { %s }", head, strings.Join(slices.Compact(names), ", "))
	default:
		w.emit("type %s %s", head, w.typ(u))
	}
	w.methods(named, head)
}

// methods lists the method set of *T, each with the receiver it is in the
// method set of (T or *T), promoted methods included.
func (w *writer) methods(named *types.Named, head string) {
	if _, isInterface := named.Underlying().(*types.Interface); isInterface {
		return
	}
	value := types.NewMethodSet(named)
	ptr := types.NewMethodSet(types.NewPointer(named))
	for i := range ptr.Len() {
		m := ptr.At(i).Obj().(*types.Func)
		if !m.Exported() {
			continue
		}
		recv := "*" + head
		if value.Lookup(m.Pkg(), m.Name()) != nil {
			recv = head
		}
		w.emit("method (%s) %s%s", recv, m.Name(), w.signature(m.Type().(*types.Signature)))
	}
}

func (w *writer) typeParams(tps *types.TypeParamList) string {
	if tps.Len() == 0 {
		return ""
	}
	var ps []string
	for i := range tps.Len() {
		tp := tps.At(i)
		ps = append(ps, tp.Obj().Name()+" "+w.typ(tp.Constraint()))
	}
	return "[" + strings.Join(ps, ", ") + "]"
}

// signature is a function's parameters and results by type alone: names are
// not part of the API.
func (w *writer) signature(sig *types.Signature) string {
	params := w.tuple(sig.Params(), sig.Variadic())
	res := sig.Results()
	switch {
	case res.Len() == 0:
		return params
	case res.Len() == 1:
		return params + " " + w.typ(res.At(0).Type())
	}
	return params + " " + w.tuple(res, false)
}

func (w *writer) tuple(t *types.Tuple, variadic bool) string {
	var ps []string
	for i := range t.Len() {
		s := w.typ(t.At(i).Type())
		if variadic && i == t.Len()-1 {
			s = "..." + strings.TrimPrefix(s, "[]")
		}
		ps = append(ps, s)
	}
	return "(" + strings.Join(ps, ", ") + ")"
}

func listed(what string, lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "\n" + what + ":\n\t" + strings.Join(lines, "\n\t")
}

// diff is the lines of got not in want, and of want not in got.
func diff(want, got string) (added, removed []string) {
	w, g := strings.Split(strings.TrimSpace(want), "\n"), strings.Split(strings.TrimSpace(got), "\n")
	for _, l := range g {
		if !slices.Contains(w, l) {
			added = append(added, l)
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			removed = append(removed, l)
		}
	}
	return added, removed
}
