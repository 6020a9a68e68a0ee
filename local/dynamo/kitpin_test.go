package dynamo_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/idemkeys/idem/local/dynamo"
)

// The kit (pkg/idemtest) installs the DynamoDB Local this repository's
// tests run on: the same lock as local/ensure-dynamodb-local.sh installs
// from, the same release. The test lives here because the kit, a library
// package, may import nothing of this repository outside pkg/.
func TestTheKitPinsTheRepositorysEngine(t *testing.T) {
	kit := filepath.Join("..", "..", "pkg", "idemtest")
	for _, f := range []string{"package.json", "package-lock.json"} {
		ours, err := os.ReadFile(filepath.Join("dynamodb-local", f))
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := os.ReadFile(filepath.Join(kit, "dynamodb-local", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Errorf("pkg/idemtest/dynamodb-local/%s differs from local/dynamo/dynamodb-local/%s: pin both to one release", f, f)
		}
	}
	if v := kitEngineVersion(t, filepath.Join(kit, "install.go")); v != dynamo.Version {
		t.Errorf("the kit says DynamoDB Local %q, local/dynamo %s", v, dynamo.Version)
	}
}

// kitEngineVersion is the constant engineVersion in the kit's source file.
func kitEngineVersion(t *testing.T, file string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var version string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "engineVersion" && len(vs.Values) == 1 {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				version, _ = strconv.Unquote(lit.Value)
			}
		}
		return true
	})
	return version
}
