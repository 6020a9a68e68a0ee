package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// codeDirs hold every Go file that can answer a problem: the library (and
// the internal packages it shares with the example API), the functions and
// the commands. local/ is the test bed and is left out
// (its provider simulator speaks Stripe's codes, not ours).
var codeDirs = []string{"pkg", "internal", "functions", "cmd"}

// problemCodes are the problem codes the code can answer, found in the
// source rather than listed by hand, so the list follows the code wherever
// a call moves: every string literal given to a parameter named code of
// type string (NewProblem(status, "code", …), transient(…, "code", …)), or
// to a struct field named Code of type string, keyed or by position
// (Refusal{Code: "code"}, Refusal{status, "code", msg},
// TransientError{Code: "code"}), in the non-test files under codeDirs.
// Names of functions and types do not matter, only those of the parameter
// and the field. It returns the sorted codes, each with where it was seen.
func problemCodes(t *testing.T, root string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, dir := range codeDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			files = append(files, f)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	params := map[string][]int{} // function or method name: the indexes of its parameters "code string"
	fields := map[string]int{}   // struct type name: the index of its field "Code string"
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if i := namedStrings(n.Type.Params, "code"); len(i) > 0 {
					params[n.Name.Name] = i
				}
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok {
					if i := namedStrings(st.Fields, "Code"); len(i) == 1 {
						fields[n.Name.Name] = i[0]
					}
				}
			}
			return true
		})
	}
	codes := map[string][]string{}
	add := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		code, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		pos := fset.Position(lit.Pos())
		rel, _ := filepath.Rel(root, pos.Filename)
		codes[code] = append(codes[code], rel+":"+strconv.Itoa(pos.Line))
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				for _, i := range params[name(n.Fun)] {
					if i < len(n.Args) {
						add(n.Args[i])
					}
				}
			case *ast.CompositeLit:
				i, ok := fields[name(n.Type)]
				if !ok {
					return true
				}
				for j, el := range n.Elts {
					if kv, keyed := el.(*ast.KeyValueExpr); keyed {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Code" {
							add(kv.Value)
						}
					} else if j == i {
						add(el)
					}
				}
			}
			return true
		})
	}
	return codes
}

// namedStrings are the indexes, counted by name, of the parameters or
// fields called want whose type is string.
func namedStrings(list *ast.FieldList, want string) []int {
	var at []int
	i := 0
	for _, f := range list.List {
		typ, _ := f.Type.(*ast.Ident)
		if len(f.Names) == 0 {
			i++
			continue
		}
		for _, n := range f.Names {
			if n.Name == want && typ != nil && typ.Name == "string" {
				at = append(at, i)
			}
			i++
		}
	}
	return at
}

// name is the last name of a function or type expression: F, pkg.F, x.M,
// F[T], *T.
func name(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.IndexExpr:
		return name(e.X)
	case *ast.IndexListExpr:
		return name(e.X)
	case *ast.StarExpr:
		return name(e.X)
	}
	return ""
}

// sortedKeys of m.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestProblemCodesAreFoundInTheSource holds the scan itself to a few codes
// known to be answered through each shape of call, so that a scan that
// finds nothing cannot pass the tests that use it.
func TestProblemCodesAreFoundInTheSource(t *testing.T) {
	codes := problemCodes(t, projectRoot(t))
	for _, c := range sortedKeys(codes) {
		t.Logf("%-26s %s", c, strings.Join(codes[c], " "))
	}
	// One per shape: NewProblem, keyed Refusal, positional Refusal,
	// ErrorResponse in a function, TransientError keyed, a helper's code parameter.
	for _, want := range []string{"idempotency_key_reused", "idempotency_key_missing", "unauthenticated", "order_exists", "provider_outcome_unknown", "provider_busy"} {
		if _, ok := codes[want]; !ok {
			t.Errorf("the scan did not find %q", want)
		}
	}
}
