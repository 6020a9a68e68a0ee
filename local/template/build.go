package template

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// makeTargets maps each "build-<LogicalId>:" target of the Makefile, the
// ones sam build runs, to the Go package its recipe builds.
func makeTargets(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	targets := map[string]string{}
	current := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "build-") && strings.HasSuffix(line, ":") {
			current = strings.TrimSuffix(line, ":")
			continue
		}
		if current != "" && strings.HasPrefix(line, "\t") {
			for _, field := range strings.Fields(line) {
				if strings.HasPrefix(field, "./functions/") {
					targets[current] = field
				}
			}
			continue
		}
		current = ""
	}
	return targets, sc.Err()
}

// Build builds every function's bootstrap into dir/<fn>/bootstrap, from the
// package its Makefile target names, as Lambda runs it: Linux, no cgo,
// -tags lambda.norpc, stripped. The host architecture keeps the binaries runnable here
// and shares the build cache with tests; make build makes the arm64 ones.
func (t *Template) Build(dir string) error {
	for _, fn := range t.Functions {
		if fn.Package == "" {
			return fmt.Errorf("%s: the Makefile has no build-%s target", fn.LogicalID, fn.LogicalID)
		}
		out := fn.Bootstrap(dir)
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, fn.Package)
		cmd.Dir, cmd.Env = t.Dir, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", fn.Package, err, b)
		}
	}
	return nil
}

// Bootstrap is where Build puts fn's binary under dir.
func (f *Function) Bootstrap(dir string) string {
	return filepath.Join(dir, filepath.Base(f.Package), "bootstrap")
}

// LocalEnv is the function's environment for a local run, as KEY=value:
// each reference to a resource resolved through refs (logical id to local
// value, a table's local name say), then extra added over it. A reference
// with no local value is an error, so that nothing runs half configured.
func (f *Function) LocalEnv(refs, extra map[string]string) ([]string, error) {
	env := map[string]string{}
	for k, v := range f.Env {
		if target, ok := strings.CutPrefix(v, RefPrefix); ok {
			local, found := refs[target]
			if !found {
				if _, overridden := extra[k]; !overridden {
					return nil, fmt.Errorf("%s: %s refers to %s, which has no local value", f.LogicalID, k, target)
				}
			}
			v = local
		}
		env[k] = v
	}
	for k, v := range extra {
		if v == "" {
			delete(env, k)
			continue
		}
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}
