package devstack

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/idemkeys/idem/local/template"
)

// EnvFile is where `make run` writes how to reach the local stack, as
// KEY=value lines: the engine's endpoint, the provider's URL and secret, and
// for each resource the local value of a reference to it, as
// REF_<LogicalId>.
const EnvFile = "local/.run/stack.env"

// RefVar prefixes the variables of EnvFile that resolve references, and
// LocalVar those that configure the local tools only.
const (
	RefVar   = "REF_"
	LocalVar = "LOCAL_"
)

// RuntimeEnv is fn's environment for a local run against the stack that
// wrote vars: references resolved through the REF_ entries, the others
// (DYNAMODB_ENDPOINT, PROVIDER_*) set over the template's values, and the
// fixed region and credentials of local engines.
func RuntimeEnv(fn *template.Function, vars map[string]string) ([]string, error) {
	refs := map[string]string{}
	extra := map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
	for k, v := range vars {
		switch id, ok := strings.CutPrefix(k, RefVar); {
		case ok:
			refs[id] = v
		case strings.HasPrefix(k, LocalVar):
			// The local stack's own settings (the dev token secret): not
			// the functions' business.
		default:
			extra[k] = v
		}
	}
	return fn.LocalEnv(refs, extra)
}

// WriteEnv writes vars to path, sorted, creating the directory.
func WriteEnv(path string, vars map[string]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lines := make([]string, 0, len(vars))
	for k, v := range vars {
		lines = append(lines, k+"="+v)
	}
	sort.Strings(lines)
	// Owner only: the file holds the local stack's JWT secret.
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// ReadEnv reads a file written by WriteEnv.
func ReadEnv(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	return vars, nil
}
