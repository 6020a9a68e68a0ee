package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/template/templatetest"
)

// TestMain starts the engine, unless -short, under which its one test skips.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(dynamotest.Main(m))
}

// TestStopsCleanlyOnInterruptOrTerminate runs the command as make run does,
// on the functions built for it and this package's engine, waits for
// "Ready", and stops it with SIGINT (what Ctrl-C sends) and with SIGTERM,
// and once with SIGINT while it starts: each time it exits 0, its last line
// is a goodbye, it wrote nothing to stderr, and the API no longer answers.
// Ready, it has said where the functions' traces go.
func TestStopsCleanlyOnInterruptOrTerminate(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end, make run's whole stack started and stopped by a signal: make test runs it")
	}
	tpl, bin := templatetest.Built(t)
	cmd := filepath.Join(t.TempDir(), "run")
	if out, err := exec.Command("go", "build", "-o", cmd, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cases := []struct {
		name    string
		sig     syscall.Signal
		waitFor string // the line after which the signal is sent
	}{
		{"Ctrl-C when ready", syscall.SIGINT, "Ready: http://"},
		{"SIGTERM when ready", syscall.SIGTERM, "Ready: http://"},
		{"Ctrl-C while starting", syscall.SIGINT, "• local DynamoDB engine: starting…"}, // a goodbye all the same
	}
	for _, tc := range cases {
		sig := tc.sig
		t.Run(tc.name, func(t *testing.T) {
			suffix := strings.ToLower(rand.Text()[:6])
			env := filepath.Join("local", ".run", "stack-test-"+suffix+".env")
			traces := filepath.Join("local", ".run", "traces-test-"+suffix+".jsonl")
			t.Cleanup(func() { _ = os.Remove(filepath.Join(tpl.Dir, traces)) }) // best effort: a stray file under local/.run costs only space
			c := exec.Command(cmd, "-quiet", "-api", "127.0.0.1:0", "-provider", "127.0.0.1:0",
				"-bin", bin, "-table-prefix", "run"+suffix+"-", "-env", env, "-traces", traces)
			var stderr bytes.Buffer
			c.Stderr = &stderr
			stdout, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Process.Kill() }() // gone already once it has stopped on the signal; this is for the paths that fail first
			var lines []string
			api, seen := "", false
			sc := bufio.NewScanner(stdout)
			for !seen && sc.Scan() {
				lines = append(lines, sc.Text())
				seen = strings.HasPrefix(sc.Text(), tc.waitFor)
				if url, ok := strings.CutPrefix(sc.Text(), "Ready: http://"); ok {
					api = url
				}
			}
			if !seen {
				t.Fatalf("no line %q:\n%s\nstderr: %s", tc.waitFor, strings.Join(lines, "\n"), stderr.String())
			}
			if err := c.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("still running 30s after the signal")
			}
			last := lines[len(lines)-1]
			if err != nil || stderr.Len() > 0 || !strings.HasPrefix(last, "• stopped") {
				t.Fatalf("after %v: %v, stderr %q, last line %q; want exit 0, nothing on stderr, the goodbye", sig, err, stderr.String(), last)
			}
			if api == "" {
				return // stopped before it served
			}
			if said := "• traces of every request: " + traces + ","; !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, said) }) {
				t.Errorf("no line %q in:\n%s", said, strings.Join(lines, "\n"))
			}
			if conn, err := net.DialTimeout("tcp", api, time.Second); err == nil {
				conn.Close()
				t.Fatalf("the API at %s still answers after the goodbye", api)
			}
		})
	}
}
