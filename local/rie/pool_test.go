package rie

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/idemkeys/idem/local/template/templatetest"
)

// TestPoolReusesAWarmEnvironment invokes the smallest Go Lambda through a
// pool, one invocation after another: one environment serves them all, as
// Lambda reuses a warm one, and Close stops it.
func TestPoolReusesAWarmEnvironment(t *testing.T) {
	root := templatetest.Project(t).Dir
	emulator, err := Binary(root)
	if err != nil {
		t.Fatal(err)
	}
	hello := filepath.Join(t.TempDir(), "hello", "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", hello, "./local/rie/testdata/hello")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	p := NewPool("hello", emulator, hello, Options{}, 2)
	defer p.Close()
	for i := range 3 {
		out, err := p.Invoke(context.Background(), []byte(`{}`))
		if err != nil || string(out) != `"hello"` {
			t.Fatalf("invocation %d: %s, %v", i+1, out, err)
		}
	}
	p.mu.Lock()
	idle, busy := len(p.idle), len(p.busy)
	p.mu.Unlock()
	if idle != 1 || busy != 0 {
		t.Fatalf("%d idle and %d busy environments after three invocations in turn, want one idle", idle, busy)
	}
	if n := p.Crash(); n != 0 {
		t.Fatalf("Crash killed %d with no invocation running", n)
	}
	rt := p.idle[0]
	p.Close()
	if !rt.Exited() || len(p.idle) != 0 {
		t.Fatal("Close left an environment running")
	}
}
