// Package docs_test holds the repository's documents to the code: every
// repository-relative link in every Markdown file resolves, every problem
// code the code can answer has its section in http-api.md,
// openapi.yaml describes template.yaml's routes and those codes, and
// RELIABILITY.md names only tests that exist, at least one a guarantee,
// and no Markdown line runs over 400 bytes.
package docs_test

import (
	"testing"

	"github.com/idemkeys/idem/local/template"
)

// projectRoot is the repository's root, where template.yaml is.
func projectRoot(t *testing.T) string {
	t.Helper()
	root, err := template.ProjectDir()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
