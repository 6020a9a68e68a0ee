// Command benchchart makes what BENCHMARKS.md opens with from one make
// bench run's outputs (bin/bench/*.md, the tables the bench tests write):
// the glance table, written to bin/bench/glance.md and in place between
// BENCHMARKS.md's glance markers, and the charts, SVG files in docs/bench,
// each naming the engine, the machine and the date. It reads the tables
// the tests write for BENCHMARKS.md, by their column names, so that the
// glance and the charts cannot drift from them, and it refuses an output
// older than the run (another run's) or a table that is not there.
//
// make bench runs it twice: with -start before the first test, which
// records the start, the machine and the toolchains in bin/bench/run.json,
// and at the end, which records the end and writes the rest:
//
//	benchchart -start -dir bin/bench -go go1.26.8 -node v20.20.2
//	benchchart -dir bin/bench -doc BENCHMARKS.md -svg docs/bench
package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], time.Now, os.Stdout, os.Stderr))
}

type options struct {
	start         bool
	dir, doc, svg string
	goVersion     string
	node          string
}

func run(args []string, now func() time.Time, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("benchchart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.start, "start", false, "record the run's start, machine and toolchains in DIR/run.json, and stop")
	fs.StringVar(&o.dir, "dir", "bin/bench", "the run's outputs")
	fs.StringVar(&o.goVersion, "go", runtime.Version(), "with -start: the Go version the bench tests run with")
	fs.StringVar(&o.node, "node", "", "with -start: the Node.js version Powertools runs on")
	fs.StringVar(&o.doc, "doc", "BENCHMARKS.md", "the file whose glance markers receive the table (empty: none)")
	fs.StringVar(&o.svg, "svg", "docs/bench", "where the charts go")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if o.start {
		err = writeRun(o.dir, runInfo{Started: now().UTC().Truncate(time.Second), Machine: thisMachine(), Go: o.goVersion, Node: o.node, LoadAtStart: loadAverage()})
	} else {
		err = render(o, now, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchchart: %v\n", err)
		return 1
	}
	return 0
}

// render reads the run in o.dir and writes the glance and the charts;
// it writes nothing unless all of them could be made.
func render(o options, now func() time.Time, stdout io.Writer) error {
	info, err := readRun(o.dir)
	if err != nil {
		return err
	}
	s := newSource(o.dir, info.Started)
	if info.Finished.IsZero() {
		info.Finished = now().UTC().Truncate(time.Second)
	}
	table := glance(s, info)
	if s.err != nil {
		return s.err
	}
	svgs, err := drawCharts(s, info)
	if err != nil {
		return err
	}
	glanceFile := filepath.Join(o.dir, "glance.md")
	files := map[string][]byte{glanceFile: []byte(table)}
	if o.doc != "" {
		doc, err := os.ReadFile(o.doc)
		if err != nil {
			return err
		}
		out, err := splice(string(doc), table)
		if err != nil {
			return fmt.Errorf("%s: %w", o.doc, err)
		}
		files[o.doc] = []byte(out)
	}
	for name, svg := range svgs {
		files[filepath.Join(o.svg, name)] = svg
	}
	if err := writeRun(o.dir, info); err != nil {
		return err
	}
	if err := os.MkdirAll(o.svg, 0o755); err != nil {
		return err
	}
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(path, files[path], 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "benchchart: wrote %s; to commit from this run:\n", glanceFile)
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if path != glanceFile {
			fmt.Fprintf(stdout, "  %s\n", path)
		}
	}
	fmt.Fprintf(stdout, "The other tables of BENCHMARKS.md are in %s/*.md and inprocess.txt, each section naming its own.\n", o.dir)
	return nil
}
