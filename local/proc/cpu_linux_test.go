package proc

import (
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestCPUCountsAChildsBusyTime(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; sleep 5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // the child is only to be gone: Wait reports the kill
	idle, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var busy time.Duration
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && busy < 100*time.Millisecond; time.Sleep(50 * time.Millisecond) {
		if busy, err = CPU(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	if busy < 100*time.Millisecond {
		t.Fatalf("a shell counting to 400,000 used %v of CPU, want at least 100ms", busy)
	}
	if idle < 0 {
		t.Fatalf("CPU(self) = %v", idle)
	}
	if _, err := CPU(1 << 30); err == nil {
		t.Fatal("CPU of no process answered")
	}
}

// Spinning until this process has used 20ms of CPU ends: on a loaded
// machine it takes longer than 20ms of wall time, never 10s.
func TestSelfCPUGrowsWithWork(t *testing.T) {
	before := SelfCPU()
	x := 0
	for start := time.Now(); SelfCPU()-before < 20*time.Millisecond; x++ {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("10s of spinning counted as %v (%d turns)", SelfCPU()-before, x)
		}
	}
}

func TestListenerFindsThisProcess(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if pid, err := Listener(port); err != nil || pid != os.Getpid() {
		t.Fatalf("Listener(%d) = %d, %v; want this process, %d", port, pid, err, os.Getpid())
	}
	l.Close()
	if pid, err := Listener(port); err == nil {
		t.Fatalf("Listener(%d) after close = %d, want an error", port, pid)
	}
}
