// Command mutate is make mutate: mutation runs on a scratch copy of the
// tree (the files git knows), every mutant's tests against one shared
// DynamoDB Local, never a change to the checkout.
//
//	mutate protocol [flags] [mutant ...]
//	mutate gremlins [flags] [target ...]
//
// protocol applies the project's own mutants, local/mutate/protocol.txt:
// for each guarantee, the change a reviewer would make to break it, with
// the packages whose tests must notice. Each mutant's packages are tested
// one after another with go test -json -count=1 -failfast, until one
// fails; the first test that failed, and when, go to a table
// (bin/mutate/protocol.md). A mutant that lives fails the run unless the
// list argues it equivalent; so does an entry whose text is not found
// exactly once, a mutant that does not compile, a kill that its test does
// not make again when run alone on the mutant, and one by a test that
// fails without the mutant in one of three runs of its own. The engine is emptied before
// each package's run, as a package's own engine would be.
//
// gremlins runs go-gremlins (pinned in tools/go.mod) over the library's
// packages, each mutant's tests the go test -failfast of its own package,
// with -short and without the examples (GOFLAGS), so that the figure is a
// lower bound, three mutants at once; then a table per package
// (bin/mutate/gremlins.md): killed, lived, not covered, timed out, not
// viable, the efficacy (killed over killed plus lived) and the mutant
// coverage (killed plus lived over all mutants), and every mutant that
// lived, its operator marked. A protocol file's mutant whose status
// go-gremlins did not settle (timed out, not covered in its cover
// profile's eyes, or killed while an entry argues it) is applied by the
// runner alone, its package's tests run with go test's own timeout, and
// counts as killed if two runs fail, lived otherwise. The run fails when
// one of a protocol file lived that no entry of the equivalents file
// (local/mutate/gremlins-equivalent.txt) argues alone, and on an entry
// that argues no living mutant, more than one, or one whose line stands
// twice.
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
		case "gremlins":
			return runGremlins(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintln(stderr, "usage: mutate protocol [flags] [mutant ...] | mutate gremlins [flags] [target ...]")
	return 2
}
