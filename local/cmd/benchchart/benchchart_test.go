package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/glance.golden.md from testdata/run")

// testdata/run is the make bench run of 2026-12-04 (its run.json), cut to
// what benchchart reads, so that the repository's Markdown stays small:
// the tables, rows and columns the glance and the charts take, and the
// captions they take a word from; a test fails without any one of them.
// Two files name the engine, so that one of them naming another is
// caught. Every cell is the run's figure; what the run wrote after it, a
// range or the calls by operation ("1.03 (0.93–1.15)", "2 (PutItem 2)"),
// is kept only on the rows the tests assert, since benchchart reads the
// figure alone.
const (
	engineName  = "DynamoDB Local 3.3.1"
	machineName = "2 vCPU (Intel Xeon, virtual), 24 GiB, Linux"
	runDate     = "2026-12-04"
)

var started = time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return started.Add(20 * time.Minute) }

// copyRun copies testdata/run into a new directory, every file written
// after the run began, and returns it.
func copyRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir("testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata/run", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeAfterStart(t, filepath.Join(dir, e.Name()), string(b))
	}
	return dir
}

func writeAfterStart(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, started.Add(time.Minute), started.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
}

const docText = "# Benchmarks\n\nWhat it costs.\n\n" + glanceBegin + "\n\nthe last run's glance\n\n" + glanceEnd + "\n\n![chart](docs/bench/latency-floor.svg)\n\n## The rest\n"

// renderRun runs benchchart on dir as make bench does at the end, with the
// doc and the charts in dir too; it returns the exit code and what was
// said.
func renderRun(t *testing.T, dir string) (code int, stdout, stderr string) {
	t.Helper()
	doc := filepath.Join(dir, "BENCHMARKS.md")
	if _, err := os.Stat(doc); errors.Is(err, os.ErrNotExist) {
		writeAfterStart(t, doc, docText)
	}
	var out, errs bytes.Buffer
	code = run([]string{"-dir", dir, "-doc", doc, "-svg", filepath.Join(dir, "svg")}, fixedNow, &out, &errs)
	return code, out.String(), errs.String()
}

func TestGlanceOfOneRunIsTheGoldenTable(t *testing.T) {
	dir := copyRun(t)
	if code, _, stderr := renderRun(t, dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := read(t, filepath.Join(dir, "glance.md"))
	if *update {
		if err := os.WriteFile("testdata/glance.golden.md", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := read(t, "testdata/glance.golden.md"); got != want {
		t.Errorf("glance.md differs from testdata/glance.golden.md (go test -update rewrites it):\n%s", got)
	}
	if lines := strings.Count(got, "\n"); lines > 25 {
		t.Errorf("the glance is %d lines, more than a screen (25)", lines)
	}
	for _, want := range []string{"on " + runDate + " (10 min 49 s)", engineName, machineName, "Go 1.26.8, Node.js 20.20.2"} {
		if !strings.Contains(got, want) {
			t.Errorf("the glance does not say %q", want)
		}
	}
}

// The holder's table and the race's both have "committed orders", keyed on
// "library": each row must read its own table (Powertools commits two
// orders when a holder outlives its lease, one in a race).
func TestGlanceReadsEachRowFromItsOwnTable(t *testing.T) {
	dir := copyRun(t)
	if code, _, stderr := renderRun(t, dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := glanceRows(t, read(t, filepath.Join(dir, "glance.md")))
	for label, want := range map[string][]string{
		"a holder outlives its lease, a retry takes the key over":      {"1 order; the holder gets ErrLeaseLost, a replay returns the retry's order", "—", "2 orders; the holder gets 201, a replay returns the holder's order", "—"},
		"50 requests at once on one key: the work runs, orders commit": {"1 run, 1 order", "50 runs, 1 order", "1 run, 1 order", "—"},
		"first request, no business write":                             {"1.62 ms (1.03× floor), 2 calls", "0.81 ms (1.03× floor), 1 call", "2 calls; `Do` 0.50, `DoAtomic` 0.24", "1.57 ms, 0.80 ms"},
	} {
		if got := rows[label]; strings.Join(got, " | ") != strings.Join(want, " | ") {
			t.Errorf("%s:\n got %q\nwant %q", label, got, want)
		}
	}
}

func glanceRows(t *testing.T, glance string) map[string][]string {
	t.Helper()
	tables := parseTables(glance)
	if len(tables) != 1 {
		t.Fatalf("the glance has %d tables, want one", len(tables))
	}
	rows := map[string][]string{}
	for _, r := range tables[0].rows {
		rows[r[0]] = r[1:]
	}
	return rows
}

func TestGlanceGoesBetweenTheMarkersAndNowhereElse(t *testing.T) {
	dir := copyRun(t)
	if code, stdout, stderr := renderRun(t, dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	} else if !strings.Contains(stdout, filepath.Join(dir, "BENCHMARKS.md")) || !strings.Contains(stdout, filepath.Join(dir, "svg", "throughput.svg")) {
		t.Errorf("it does not say which files to commit:\n%s", stdout)
	}
	glance := read(t, filepath.Join(dir, "glance.md"))
	want := strings.Replace(docText, "\n\nthe last run's glance\n\n", "\n\n"+glance+"\n", 1)
	if got := read(t, filepath.Join(dir, "BENCHMARKS.md")); got != want {
		t.Errorf("BENCHMARKS.md:\n%s\nwant:\n%s", got, want)
	}
	// A second run replaces the glance, and leaves the file as it was.
	if code, _, stderr := renderRun(t, dir); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	if got := read(t, filepath.Join(dir, "BENCHMARKS.md")); got != want {
		t.Errorf("after a second run, BENCHMARKS.md:\n%s\nwant:\n%s", got, want)
	}
}

func TestChartsAreSVGNamingEngineMachineAndDate(t *testing.T) {
	dir := copyRun(t)
	if code, _, stderr := renderRun(t, dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, c := range charts {
		b, err := os.ReadFile(filepath.Join(dir, "svg", c.name))
		if err != nil {
			t.Fatal(err)
		}
		text := svgText(t, c.name, b)
		for _, want := range []string{engineName, machineName, runDate} {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not name %q; its text: %s", c.name, want, text)
			}
		}
		if bytes.Contains(b, []byte("font-family:Liberation Sans;")) {
			t.Errorf("%s names a font without a fallback", c.name)
		}
	}
	text := svgText(t, "latency-powertools.svg", readBytes(t, filepath.Join(dir, "svg", "latency-powertools.svg")))
	for _, want := range []string{"pkg/idem Do", "pkg/idem DoAtomic", "Powertools", "4.85", "6.86", "2.03"} {
		if !strings.Contains(text, want) {
			t.Errorf("latency-powertools.svg does not show %q", want)
		}
	}
}

// svgText checks that b is an SVG document that XML parses, and returns
// its text.
func svgText(t *testing.T, name string, b []byte) string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var text strings.Builder
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not XML: %v", name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
			text.WriteString(" ")
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", name, root)
	}
	return text.String()
}

// The achieved concurrency in process is drawn when the in-process table
// has it (runs before it had the column are drawn without).
func TestConcurrencyChartDrawsInProcessWhereTheRunMeasuredIt(t *testing.T) {
	dir := copyRun(t)
	var b strings.Builder
	for _, l := range strings.Split(read(t, filepath.Join(dir, "concurrency.md")), "\n") {
		switch {
		case strings.HasPrefix(l, "| invocations"):
			l += " achieved concurrency |"
		case strings.HasPrefix(l, "|---"):
			l += "---|"
		case strings.HasPrefix(l, "| "):
			l += " 0.9 |"
		}
		b.WriteString(l + "\n")
	}
	writeAfterStart(t, filepath.Join(dir, "concurrency.md"), b.String())
	if code, _, stderr := renderRun(t, dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if text := svgText(t, "concurrency.svg", readBytes(t, filepath.Join(dir, "svg", "concurrency.svg"))); !strings.Contains(text, "Do, in process") {
		t.Errorf("concurrency.svg draws no in-process line: %s", text)
	}
	plain := copyRun(t)
	if code, _, stderr := renderRun(t, plain); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if text := svgText(t, "concurrency.svg", readBytes(t, filepath.Join(plain, "svg", "concurrency.svg"))); strings.Contains(text, "in process") {
		t.Errorf("concurrency.svg draws an in-process line the run did not measure: %s", text)
	}
}

// Each way a run's outputs can be wrong fails the run, naming the file and
// what is wrong, and writes nothing.
func TestRefusesOutputsThatAreNotOneRunsTables(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
		want  []string
	}{
		{"an output older than the run", func(t *testing.T, dir string) {
			old := started.Add(-time.Hour)
			if err := os.Chtimes(filepath.Join(dir, "floor.md"), old, old); err != nil {
				t.Fatal(err)
			}
		}, []string{"floor.md", "another run's"}},
		{"an output missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "concurrency-rie.md")); err != nil {
				t.Fatal(err)
			}
		}, []string{"concurrency-rie.md", "no such file"}},
		{"a column renamed", func(t *testing.T, dir string) {
			text := strings.Replace(read(t, filepath.Join(dir, "floor.md")), "| library ms per request |", "| library, ms per request |", 1)
			writeAfterStart(t, filepath.Join(dir, "floor.md"), text)
		}, []string{"floor.md", "library ms per request"}},
		{"a row missing", func(t *testing.T, dir string) {
			text := strings.Replace(read(t, filepath.Join(dir, "coldstart.md")), "| OrderFunction |", "| TheOrderFunction |", 1)
			writeAfterStart(t, filepath.Join(dir, "coldstart.md"), text)
		}, []string{"coldstart.md", "OrderFunction"}},
		{"a cell that is no number", func(t *testing.T, dir string) {
			text := strings.Replace(read(t, filepath.Join(dir, "load.md")), "| Do | 576 |", "| Do | n/a |", 1)
			writeAfterStart(t, filepath.Join(dir, "load.md"), text)
		}, []string{"load.md", "not a number"}},
		{"two tables the glance cannot tell apart", func(t *testing.T, dir string) {
			text := read(t, filepath.Join(dir, "powertools.md"))
			i := strings.Index(text, "A holder with")
			writeAfterStart(t, filepath.Join(dir, "powertools.md"), text+"\n"+text[i:])
		}, []string{"powertools.md", "2 tables"}},
		{"engines that differ", func(t *testing.T, dir string) {
			text := strings.Replace(read(t, filepath.Join(dir, "cache.md")), "DynamoDB Local 3.3.1", "DynamoDB Local 3.2.0", 1)
			writeAfterStart(t, filepath.Join(dir, "cache.md"), text)
		}, []string{"3.2.0", "not one run"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyRun(t)
			c.spoil(t, dir)
			code, _, stderr := renderRun(t, dir)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr: %s", code, stderr)
			}
			for _, want := range c.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q: %s", want, stderr)
				}
			}
			if got := read(t, filepath.Join(dir, "BENCHMARKS.md")); got != docText {
				t.Errorf("BENCHMARKS.md was written:\n%s", got)
			}
			if _, err := os.Stat(filepath.Join(dir, "svg")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("charts were written (%v)", err)
			}
		})
	}
}

func TestRefusesADocWithoutTheMarkers(t *testing.T) {
	for name, doc := range map[string]string{
		"no markers":         "# Benchmarks\n",
		"no closing marker":  "# Benchmarks\n" + glanceBegin + "\n",
		"the closing before": "# Benchmarks\n" + glanceEnd + "\n" + glanceBegin + "\n",
	} {
		if _, err := splice(doc, "| a |\n"); !errors.Is(err, errBench) {
			t.Errorf("%s: %v, want errBench", name, err)
		}
	}
}

// A doc whose opening marker is worded otherwise (it named where this
// program lived before) still takes the glance, under today's marker.
func TestSpliceRewritesAnOlderOpeningMarker(t *testing.T) {
	doc := "# Benchmarks\n" + glanceOpen + " make bench writes here (tools/benchchart) -->\n\nold\n\n" + glanceEnd + "\nrest\n"
	got, err := splice(doc, "| a |\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Benchmarks\n" + glanceBegin + "\n\n| a |\n\n" + glanceEnd + "\nrest\n"; got != want {
		t.Errorf("splice gave\n%s\nwant\n%s", got, want)
	}
}

func TestStartRecordsTheRunAndTheEndIsRecordedOnce(t *testing.T) {
	dir := t.TempDir()
	var out, errs bytes.Buffer
	if code := run([]string{"-start", "-dir", dir, "-go", "go1.26.8", "-node", "v20.20.2"}, func() time.Time { return started }, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	info, err := readRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Started.Equal(started) || info.Machine == "" || info.Go != "go1.26.8" || info.Node != "v20.20.2" || !info.Finished.IsZero() {
		t.Errorf("run.json after -start: %+v", info)
	}
	// The end of the run is recorded by the first render, and kept.
	dir = copyRun(t)
	info.Finished = time.Time{}
	b, _ := json.Marshal(info)
	writeAfterStart(t, filepath.Join(dir, runFile), string(b))
	for i := range 2 {
		later := func() time.Time { return fixedNow().Add(time.Duration(i) * time.Hour) } // a second render ends nothing
		var out, errs bytes.Buffer
		if code := run([]string{"-dir", dir, "-doc", "", "-svg", filepath.Join(dir, "svg")}, later, &out, &errs); code != 0 {
			t.Fatalf("exit %d: %s", code, errs.String())
		}
		got, err := readRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Finished.Equal(fixedNow()) {
			t.Errorf("finished %v, want %v", got.Finished, fixedNow())
		}
	}
	if glance := read(t, filepath.Join(dir, "glance.md")); !strings.Contains(glance, "(20 min 0 s)") {
		t.Errorf("the glance does not give the run's wall time, 20 min 0 s:\n%s", glance)
	}
}

func TestDescribeMachine(t *testing.T) {
	cpuinfo := "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz\nflags\t\t: fpu vme lahf_lm hypervisor\n"
	for _, c := range []struct {
		cpus              int
		cpuinfo, meminfo  string
		goos, description string
	}{
		{2, cpuinfo, "MemTotal:       24683784 kB\n", "linux", "2 vCPU (Intel Xeon Platinum 8375C CPU @ 2.90GHz, virtual), 24 GiB, Linux"},
		{2, "model name\t: AMD EPYC hypervisor edition\nflags\t\t: fpu\n", "MemTotal:       8000000 kB\n", "linux", "2 CPU (AMD EPYC hypervisor edition), 8 GiB, Linux"},
		{8, "", "", "darwin", "8 CPU, darwin"},
	} {
		if got := describeMachine(c.cpus, c.cpuinfo, c.meminfo, c.goos); got != c.description {
			t.Errorf("got %q, want %q", got, c.description)
		}
	}
}

func read(t *testing.T, path string) string { return string(readBytes(t, path)) }

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
