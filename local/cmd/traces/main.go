// Command traces prints the spans the local stack's functions wrote
// (make run's local/.run/traces.jsonl, a JSON line per span) as trees, a
// trace each, oldest first: each span with its outcome, its table or URL
// path, its status, its duration, and the idempotency steps (·) between its
// DynamoDB and provider calls. It prints what the spans carry, and the
// spans never carry a key, a scope, a body or a header value.
//
//	go run ./local/cmd/traces [-n 2] [-all] [-f local/.run/traces.jsonl]
//
// -n keeps the last n traces; the calls a cold start makes outside any
// invocation (the idempotency table's check) are left out unless -all.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/template"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run prints the traces as args say: 0, 2 for bad flags, 1 when the file
// cannot be read.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("traces", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "the traces file (default: "+devstack.TracesFile+" under the project root)")
	last := fs.Int("n", 0, "print only the last n traces (0: all)")
	all := fs.Bool("all", false, "also the traces of calls outside any invocation (a cold start's)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" {
		root, err := template.ProjectDir()
		if err != nil {
			fmt.Fprintln(stderr, "traces:", err)
			return 1
		}
		*file = filepath.Join(root, devstack.TracesFile)
	}
	f, err := os.Open(*file)
	if err != nil {
		fmt.Fprintf(stderr, "traces: %v (make run writes it; -f names another)\n", err)
		return 1
	}
	defer func() { _ = f.Close() }() // read only
	traces, skipped, err := read(f)
	if err != nil {
		fmt.Fprintln(stderr, "traces:", err)
		return 1
	}
	shown, outside := selectTraces(traces, *last, *all)
	for i, t := range shown {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		t.print(stdout)
	}
	if outside > 0 {
		fmt.Fprintf(stdout, "\n(%d traces of calls outside any invocation left out: -all shows them)\n", outside)
	}
	if skipped > 0 {
		fmt.Fprintf(stdout, "(%d lines that are not spans skipped)\n", skipped)
	}
	return 0
}

// selectTraces keeps the last n of traces (all when n is 0), leaving out,
// unless all, those of calls outside any invocation, which it counts.
func selectTraces(traces []*trace, n int, all bool) (kept []*trace, outside int) {
	for _, t := range traces {
		if !all && t.outsideInvocations() {
			outside++
			continue
		}
		kept = append(kept, t)
	}
	if n > 0 && len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return kept, outside
}

// spanKindClient is OpenTelemetry's trace.SpanKindClient, as the exporter
// writes it.
const spanKindClient = 3

// outsideInvocations: every span of t is a client call with no parent,
// such as the DescribeTable a function makes at cold start.
func (t *trace) outsideInvocations() bool {
	for _, s := range t.spans {
		if s.SpanKind != spanKindClient || s.Parent.SpanID != noSpan && s.Parent.SpanID != "" {
			return false
		}
	}
	return true
}
