package idemtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idemtest"
)

// TestAModuleOfOnesOwnTestsItsLambdaWithTheKit holds the kit's promise from
// outside: a scratch module (testdata/outside: the README's HTTP API Lambda
// and its tests, a duplicate request, a commit whose answer is lost and an
// invocation killed with its commit in flight) that
// requires this checkout through a replace, imports nothing of it but
// pkg/idem (its doors included) and pkg/idemtest (its launcher included),
// and passes its tests against the engine this binary already runs
// (DYNAMODB_ENDPOINT, so no second JVM). It builds from the module cache,
// offline (GOPROXY=off) unless that fails.
func TestAModuleOfOnesOwnTestsItsLambdaWithTheKit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	endpoint, err := idemtest.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	checkout := moduleRoot(t)
	mod := t.TempDir()
	for _, f := range []string{"main.go", "main_test.go"} {
		copyFile(t, filepath.Join("testdata", "outside", f), filepath.Join(mod, f))
	}
	copyFile(t, filepath.Join(checkout, "go.sum"), filepath.Join(mod, "go.sum")) // the hashes of the modules it shares
	gomod := "module example.com/orders\n\ngo 1.26\n\nrequire github.com/idemkeys/idem v0.0.0\n\nreplace github.com/idemkeys/idem => " + checkout + "\n"
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}

	goCmd := func(proxy string, args ...string) (string, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local", "DYNAMODB_ENDPOINT="+endpoint)
		if proxy != "" {
			cmd.Env = append(cmd.Env, "GOPROXY="+proxy)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	start := time.Now()
	out, err := goCmd("off", "test", "-count=1", "-v", "./...")
	how := "offline, from the module cache (GOPROXY=off)"
	if err != nil && offlineFailure(out) {
		t.Logf("offline, the module could not be built:\n%s", out)
		out, err = goCmd("", "test", "-count=1", "-v", "./...")
		how = "through the inherited GOPROXY=" + os.Getenv("GOPROXY")
	}
	t.Logf("built and tested %s in %v", how, time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("the module's tests failed: %v\n%s", err, out)
	}
	for _, test := range []string{"TestARetryGetsTheFirstAnswer", "TestACommitWhoseAnswerIsLostIsNotDoneTwice", "TestALambdaKilledWithItsCommitInFlightIsTakenOverOnce"} {
		if !strings.Contains(out, "--- PASS: "+test) {
			t.Errorf("%s did not pass:\n%s", test, out)
		}
	}

	onlyTheKitsDependencies(t, mod, goCmd)
}

// onlyTheKitsDependencies: what the module pulls in of this repository is
// pkg/idem and the kit, and its go.mod requires neither the template's
// parser nor YAML.
func onlyTheKitsDependencies(t *testing.T, mod string, goCmd func(proxy string, args ...string) (string, error)) {
	t.Helper()
	deps, err := goCmd("off", "list", "-deps", "-test", "-f", "{{.ImportPath}}", "./...")
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, deps)
	}
	for _, p := range strings.Fields(deps) {
		if strings.HasPrefix(p, "github.com/idemkeys/idem/") && p != "github.com/idemkeys/idem/pkg/idem" && p != "github.com/idemkeys/idem/pkg/idemtest" && !strings.HasPrefix(p, "github.com/idemkeys/idem/pkg/idem/") && !strings.HasPrefix(p, "github.com/idemkeys/idem/pkg/idemtest/") {
			t.Errorf("the module builds %s, which is not pkg/idem's or the kit's", p)
		}
	}
	got, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, unwanted := range []string{"goformation", "yaml"} {
		if strings.Contains(string(got), unwanted) {
			t.Errorf("the module's go.mod requires %s:\n%s", unwanted, got)
		}
	}
}

// offlineFailure: the go command wanted a module it has not cached.
func offlineFailure(out string) bool {
	for _, s := range []string{"GOPROXY=off", "module lookup disabled", "verifying module", "missing go.sum entry"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// moduleRoot is the checkout holding this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "go.mod") {
		t.Fatalf("go env GOMOD: %q, %v", out, err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
