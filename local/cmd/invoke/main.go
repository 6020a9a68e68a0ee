// Command invoke runs a function's built bootstrap under the Lambda Runtime
// Interface Emulator with an event file and prints the response, as
// `sam local invoke -e EVENT` does, with no container.
//
//	go run ./local/cmd/invoke -fn charge -event events/charge-create.json [-times 2]
//
// The function gets the environment template.yaml gives it, pointed at the
// stack that `make run` started (local/.run/stack.env).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
)

func main() {
	fn := flag.String("fn", "", "the function, by its directory under functions/ (charge, order)")
	event := flag.String("event", "", "the event file to invoke it with")
	times := flag.Int("times", 1, "invoke this many times in one execution environment (2 shows a replay)")
	flag.Parse()
	if *fn == "" || *event == "" || *times < 1 {
		fmt.Fprintln(os.Stderr, "usage: invoke -fn charge -event events/charge-create.json [-times N]")
		os.Exit(2)
	}
	if err := run(*fn, *event, *times); err != nil {
		fmt.Fprintln(os.Stderr, "invoke:", err)
		os.Exit(1)
	}
}

func run(fnDir, eventPath string, times int) error {
	payload, err := os.ReadFile(eventPath)
	if err != nil {
		return err
	}
	if !json.Valid(payload) {
		return fmt.Errorf("%s is not JSON", eventPath)
	}
	tpl, err := template.Project()
	if err != nil {
		return err
	}
	root := tpl.Dir
	fn, err := function(tpl, fnDir)
	if err != nil {
		return err
	}
	env, err := stackEnv(root, fn)
	if err != nil {
		return err
	}
	bootstrap := filepath.Join(root, "bin", fnDir, "bootstrap")
	if _, err := os.Stat(bootstrap); err != nil {
		return fmt.Errorf("%s is not built: run `make build`", bootstrap)
	}
	emulator, err := rie.Binary(root)
	if err != nil {
		return err
	}
	ctx := context.Background()
	fmt.Fprintf(os.Stderr, "• %s (%s) under the Runtime Interface Emulator\n", fn.LogicalID, bootstrap)
	rt, err := rie.Start(ctx, emulator, bootstrap, rie.Options{Env: env, Timeout: time.Duration(fn.Timeout) * time.Second, Output: os.Stderr})
	if err != nil {
		return err
	}
	defer rt.Stop()
	for i := range times {
		start := time.Now()
		out, err := rt.Invoke(ctx, payload)
		fmt.Fprintf(os.Stderr, "• invocation %d of %d: %v\n", i+1, times, time.Since(start).Round(time.Millisecond))
		var pretty bytes.Buffer
		if json.Indent(&pretty, out, "", "  ") == nil {
			out = pretty.Bytes()
		}
		fmt.Println(string(out))
		if err != nil {
			return err
		}
	}
	return nil
}

// function is the function of tpl that builds ./functions/<fnDir>.
func function(tpl *template.Template, fnDir string) (*template.Function, error) {
	for i := range tpl.Functions {
		if tpl.Functions[i].Package == "./functions/"+fnDir {
			return &tpl.Functions[i], nil
		}
	}
	return nil, fmt.Errorf("no function in template.yaml builds ./functions/%s", fnDir)
}

// stackEnv is fn's environment against the stack that make run started.
func stackEnv(root string, fn *template.Function) ([]string, error) {
	vars, err := devstack.ReadEnv(filepath.Join(root, devstack.EnvFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no local stack running: start one with `make run` in another terminal")
	}
	if err != nil {
		return nil, err
	}
	return devstack.RuntimeEnv(fn, vars)
}
