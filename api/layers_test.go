package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/idemkeys/idem"

// TestTheLibraryImportsNothingOutsidePkg holds the layers to one direction:
// no package under pkg/, in its code or in its tests (internal and external
// test packages alike), imports anything of this module outside pkg/ (the
// test bed in local/, the example API in functions/, the commands in cmd/,
// the root internal/). The example API and the test bed may import the
// library, never the other way: the library can then be read, tested and
// used without them.
func TestTheLibraryImportsNothingOutsidePkg(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", "../pkg/...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for {
		var raw struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		for kind, imports := range map[string][]string{"imports": raw.Imports, "its tests import": append(raw.TestImports, raw.XTestImports...)} {
			for _, imp := range imports {
				if outsidePkg(imp) {
					t.Errorf("%s %s %s, outside pkg/: the library may import only itself and other modules", raw.ImportPath, kind, imp)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("go list found no package under pkg/")
	}
}

// outsidePkg says whether path is a package of this module outside pkg/.
func outsidePkg(path string) bool {
	return (path == module || strings.HasPrefix(path, module+"/")) && !strings.HasPrefix(path, module+"/pkg/")
}
