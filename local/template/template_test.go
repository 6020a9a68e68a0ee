package template_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/idemkeys/idem/local/template"
)

func TestLoadResolvesGlobalsRefsAndBuildTargets(t *testing.T) {
	tpl, err := template.Project()
	if err != nil {
		t.Fatal(err)
	}
	charge, err := tpl.Function("ChargeFunction")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ what, got, want string }{
		{"package from the Makefile's build-ChargeFunction", charge.Package, "./functions/charge"},
		{"a resource Ref in Globals", charge.Env["IDEMPOTENCY_TABLE"], template.RefPrefix + "IdempotencyTable"},
		{"a parameter Ref in Globals", charge.Env["SCOPE_CLAIM"], "sub"},
		{"a resource Ref in the function", charge.Env["CHARGES_TABLE"], template.RefPrefix + "ChargesTable"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if charge.Timeout <= 0 {
		t.Errorf("timeout %d not taken from Globals", charge.Timeout)
	}
	if !slices.Contains(charge.Routes, template.Route{Event: "CreateCharge", Method: "POST", Path: "/charges"}) {
		t.Errorf("routes = %v, want POST /charges among them", charge.Routes)
	}
	var resources []string
	for _, p := range charge.Policies {
		resources = append(resources, p.Resources...)
	}
	if !slices.Contains(resources, template.GetAttPrefix+"ChargesTable.Arn") {
		t.Errorf("policy resources = %v, want the ChargesTable ARN as a GetAtt", resources)
	}
}

func TestLocalEnvResolvesReferencesOrRefuses(t *testing.T) {
	fn := &template.Function{LogicalID: "F", Env: map[string]string{
		"TABLE":  template.RefPrefix + "T",
		"PLAIN":  "x",
		"SECRET": "/ssm/name",
	}}
	env, err := fn.LocalEnv(map[string]string{"T": "local-T"}, map[string]string{"EXTRA": "y", "SECRET": ""})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"EXTRA=y", "PLAIN=x", "TABLE=local-T"}; !slices.Equal(env, want) {
		t.Fatalf("env = %v, want %v (an empty extra removes a variable)", env, want)
	}
	if _, err := fn.LocalEnv(nil, nil); err == nil {
		t.Fatal("an unresolved reference was not refused")
	}
}

// Tests that make their tables in parallel read the template at once:
// each read must stand beside the others (goformation keeps state of its
// own between parses, which the package serializes).
func TestTheTemplateIsReadConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			if _, err := template.Project(); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
