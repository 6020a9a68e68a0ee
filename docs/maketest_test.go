package docs_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo is a go command for local/test.sh that fails `go test` when
// FAKE_FAIL names the step's last argument, and passes everything else.
const fakeGo = `#!/usr/bin/env bash
last="${@: -1}"
case "$1" in
  tool) echo "0 issues." ;;
  test) [ "$last" = "${FAKE_FAIL:-}" ] && { echo '{"Action":"fail"}'; exit 1; }; echo '{"Action":"pass"}' ;;
esac
`

// runTestSh runs make test's steps (local/test.sh) with the fake go, and
// returns its standard error and exit code.
func runTestSh(t *testing.T, fail string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	goBin := filepath.Join(dir, "go")
	if err := os.WriteFile(goBin, []byte(fakeGo), 0o700); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir() // the script writes bin/local/lint.txt where it runs
	cmd := exec.Command("bash", filepath.Join(projectRoot(t), "local", "test.sh"))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GO="+goBin, "FAKE_FAIL="+fail, "FUZZ_TARGETS=internal/canonjson:FuzzA internal/door:FuzzB")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stderr.String(), 0
	case errors.As(err, &exit):
		return stderr.String(), exit.ExitCode()
	}
	t.Fatalf("local/test.sh: %v", err)
	return "", 0
}

// make test's steps exit non-zero when a step fails, and name on standard
// error (which gotestsum lists under "=== Errors" and counts in its
// closing line) every step that did not run after it, so that a run cut
// short never reads as a whole one; a run whose steps all pass exits 0.
func TestMakeTestNamesWhatDidNotRunAndFails(t *testing.T) {
	stderr, code := runTestSh(t, "./...")
	if code != 1 || !strings.Contains(stderr, "not run, after go test ./... failed: FuzzA FuzzB") {
		t.Errorf("a failed go test ./...: exit %d, stderr %q; want 1 and the two fuzz targets named", code, stderr)
	}
	stderr, code = runTestSh(t, "./pkg/idem/internal/canonjson")
	if code != 1 || !strings.Contains(stderr, "not run, after FuzzA failed: FuzzB") {
		t.Errorf("a failed first fuzz target: exit %d, stderr %q; want 1 and the second named", code, stderr)
	}
	if stderr, code = runTestSh(t, ""); code != 0 || stderr != "" {
		t.Errorf("every step passed: exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
}
