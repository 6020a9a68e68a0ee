// Command mutate is make mutate-protocol: the project's own mutants,
// local/mutate/protocol.txt, each applied to a scratch copy of the tree
// (the files git knows), every mutant's tests against one shared DynamoDB
// Local, never a change to the checkout. go-gremlins, pinned in
// tools/go.mod, mutates operators at large with its own report and
// thresholds (make mutate-gremlins); this command does what it cannot:
// a mutant written by hand to break one guarantee, and the test named to
// kill it.
//
//	mutate protocol [flags] [mutant ...]
//
// For each guarantee the list holds the change a reviewer would make to
// break it, with the packages whose tests must notice. Each mutant's
// packages are tested one after another with go test -json -count=1
// -failfast, until one fails; the first test that failed, and when, go to
// a table (bin/mutate/protocol.md). A mutant that lives fails the run
// unless the list argues it equivalent; so does an entry whose text is not
// found exactly once, a mutant that does not compile, a kill that its test
// does not make again when run alone on the mutant, and one by a test that
// fails without the mutant in one of three runs of its own. The engine is
// emptied before each package's run, as a package's own engine would be.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the subcommand args name: its exit code, or 2 without one.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "protocol":
			return runProtocol(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintln(stderr, "usage: mutate protocol [flags] [mutant ...]")
	return 2
}
