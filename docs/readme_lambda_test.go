package docs_test

import (
	"os"
	"path/filepath"
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
