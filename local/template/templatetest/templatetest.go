// Package templatetest gives tests the project's template and its functions
// built as Lambda runs them.
package templatetest

import (
	"testing"

	"github.com/idemkeys/idem/local/template"
)

// Project loads the project's template.yaml, or fails t.
func Project(t testing.TB) *template.Template {
	t.Helper()
	tpl, err := template.Project()
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// Built loads the template and builds every function's bootstrap into a
// directory that lives as long as t (see template.Template.Build).
func Built(t testing.TB) (*template.Template, string) {
	t.Helper()
	tpl := Project(t)
	bin := t.TempDir()
	if err := tpl.Build(bin); err != nil {
		t.Fatal(err)
	}
	return tpl, bin
}
