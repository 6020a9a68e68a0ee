// Command demo walks through the idempotency guarantees against the stack
// that make run started, printing each request and answer, and ends with a
// table of requests sent against charges made.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/idemkeys/idem/local/demo"
	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/template"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := template.ProjectDir()
	if err != nil {
		return err
	}
	vars, err := devstack.ReadEnv(filepath.Join(root, devstack.EnvFile))
	if err != nil {
		return fmt.Errorf("no local stack running: start one with `make run` in another terminal (%w)", err)
	}
	auth, err := devstack.AuthorizerFromVars(vars)
	if err != nil {
		return err
	}
	results, err := demo.Run(context.Background(), demo.Target{
		APIURL:      vars[devstack.LocalVar+"API_URL"],
		ProviderURL: vars["PROVIDER_LOCAL_URL"],
		Token:       func(sub string) (string, error) { return auth.Token(sub, time.Hour) },
	}, os.Stdout)
	if err != nil {
		return err
	}
	for _, r := range results {
		if !r.OK() {
			return fmt.Errorf("scenario %q did not hold", r.Name)
		}
	}
	return nil
}
