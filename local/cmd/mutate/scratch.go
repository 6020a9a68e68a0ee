package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/local/dynamo"
)

// scratch is what every mutant of a run shares: a copy of the tree, where
// the mutants are applied (never to the checkout), and one engine of its
// own, which every test run reaches through DYNAMODB_ENDPOINT (one that
// the environment names is not used: empty drops every table).
type scratch struct {
	src    string   // the copy's root
	root   *os.Root // the same, as a root: what is written there stays there
	module string   // its module's path, from its go.mod
	engine *dynamo.Engine
}

// newScratch copies the tree to work/src and starts the engine.
func newScratch(ctx context.Context, work string, stdout io.Writer) (*scratch, error) {
	abs, err := filepath.Abs(work)
	if err != nil {
		return nil, err
	}
	s := &scratch{src: filepath.Join(abs, "src")}
	if err := copyTree(ctx, s.src); err != nil {
		return nil, fmt.Errorf("the tree's copy: %w", err)
	}
	if s.root, err = os.OpenRoot(s.src); err != nil {
		return nil, err
	}
	if s.module, err = modulePath(s.root); err != nil {
		return nil, errors.Join(err, s.root.Close())
	}
	if s.engine, err = dynamo.Start(ctx, io.Discard); err != nil {
		return nil, errors.Join(err, s.root.Close(), os.RemoveAll(s.src))
	}
	fmt.Fprintf(stdout, "• one engine for every mutant's tests: %s\n", s.engine.Endpoint)
	return s, nil
}

// close stops the engine and removes the copy: left under bin/, its Go
// files would meet the checkout's gofmt -l . (make vet), a mutant's among
// them if a run was killed halfway.
func (s *scratch) close() {
	_ = s.engine.Stop()     // the run's figures are written; a stuck engine dies with this process
	_ = s.root.Close()      // every write through it was checked as it was made
	_ = os.RemoveAll(s.src) // a copy left behind is copied afresh by the next run
}

// modulePath is the module's path, from the go.mod at root.
func modulePath(root *os.Root) (string, error) {
	b, err := root.ReadFile("go.mod")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(path), nil
		}
	}
	return "", errors.New("go.mod: no module line")
}

// command is go with args, run in the copy against the shared engine.
func (s *scratch) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = s.src
	cmd.Env = append(os.Environ(), dynamo.EndpointEnv+"="+s.engine.Endpoint)
	return cmd
}

// empty drops every table of the engine, so that each test run meets it
// as a package's own engine would: an example creates its tables under
// fixed names, which a second run on the same engine finds there already.
func (s *scratch) empty(ctx context.Context) error {
	db := dynamo.NewClient(s.engine.Endpoint)
	pages := dynamodb.NewListTablesPaginator(db, &dynamodb.ListTablesInput{})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("the engine's tables: %w", err)
		}
		for _, name := range page.TableNames {
			if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &name}); err != nil {
				return fmt.Errorf("the engine's table %s: %w", name, err)
			}
		}
	}
	return nil
}

// copyTree writes the files git knows (tracked, and new ones it does not
// ignore) to dst afresh, so that a mutant never touches the checkout and
// bin/ (the engine's install, the builds) is not copied into every run.
// Both ends are roots: no name git gives can reach outside either.
func copyTree(ctx context.Context, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	from, err := os.OpenRoot(".")
	if err != nil {
		return err
	}
	defer func() { _ = from.Close() }() // read only
	to, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer func() { _ = to.Close() }() // each write is checked as it is made
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if err := copyFile(from, to, f); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to *os.Root, name string) error {
	b, err := from.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // deleted in the work tree, not yet in the index
	}
	if err != nil {
		return err
	}
	info, err := from.Stat(name)
	if err != nil {
		return err
	}
	if err := to.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return to.WriteFile(name, b, info.Mode().Perm())
}

func writeFile(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
