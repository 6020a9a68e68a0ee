// Package dynamolocal starts AWS's DynamoDB Local from its jar and stops
// it, for tests and local development.
//
// The engine runs in memory (-inMemory), with one database whatever the
// credentials and Region (-sharedDb). On Unix it runs in a process group of
// its own, which Stop ends whole; on Linux the kernel also kills it when the
// process that started it dies, so that a test binary that exits early
// leaves no Java behind.
package dynamolocal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options say where the engine listens and where its output goes.
type Options struct {
	// Port is the port it listens on. Zero draws one from FreePort, and
	// draws again, three times in all, when the engine does not come up on
	// it: a free port can be taken before the engine binds it.
	Port int
	// FreePort draws a free port; nil takes one the kernel picks on
	// 127.0.0.1.
	FreePort func() (int, error)
	// Log receives the engine's output; nil drops it. Start's errors end
	// with the last of it either way.
	Log io.Writer
}

// Engine is a DynamoDB Local that Start started.
type Engine struct {
	Endpoint string // http://127.0.0.1:Port
	Port     int
	pid      int
	exited   chan struct{}
}

// Java returns the java on PATH, which Start runs. Its error says what to
// install.
func Java() (string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("DynamoDB Local needs Java 17 or later, and java is not on PATH: install a Java runtime (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; macOS: brew install openjdk@17)")
	}
	return java, nil
}

// Start runs the DynamoDBLocal.jar at jar, its DynamoDBLocal_lib beside it,
// with the java on PATH, and waits until it answers or ctx ends. An engine
// that exits first, or is still silent then, is stopped, and the error says
// why; a java older than 17 is named.
func Start(ctx context.Context, jar string, o Options) (*Engine, error) {
	java, err := Java()
	if err != nil {
		return nil, err
	}
	if o.Port != 0 {
		return start(ctx, java, jar, o.Port, o.Log)
	}
	draw := o.FreePort
	if draw == nil {
		draw = kernelPort
	}
	for try := 1; ; try++ {
		port, err := draw()
		if err != nil {
			return nil, err
		}
		e, err := start(ctx, java, jar, port, o.Log)
		if err == nil || try == 3 || ctx.Err() != nil {
			return e, err
		}
	}
}

// start runs the jar on port and waits until it answers. The goroutine that
// starts it keeps its OS thread until the engine exits: on Linux the engine
// is killed when that thread ends (Pdeathsig), which is then only when the
// whole process does.
func start(ctx context.Context, java, jar string, port int, log io.Writer) (*Engine, error) {
	e := &Engine{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), Port: port, exited: make(chan struct{})}
	out := &tail{}
	var w io.Writer = out
	if log != nil {
		w = io.MultiWriter(out, log)
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		dir := filepath.Dir(jar)
		cmd := exec.Command(java, "-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"), "-jar", jar,
			"-inMemory", "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(port))
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = w, w
		cmd.SysProcAttr = sysProcAttr()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		e.pid = cmd.Process.Pid
		started <- nil
		cmd.Wait()
		close(e.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start DynamoDB Local (%s): %v", jar, err)
	}
	if err := e.waitReady(ctx, out); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Engine) waitReady(ctx context.Context, out *tail) error {
	for {
		if Ping(ctx, e.Endpoint) == nil {
			return nil
		}
		select {
		case <-e.exited:
			if strings.Contains(out.String(), "UnsupportedClassVersionError") {
				return fmt.Errorf("DynamoDB Local needs Java 17 or later, and the java on PATH is older: install one (Debian/Ubuntu: apt-get install openjdk-17-jre-headless): %s", out)
			}
			return fmt.Errorf("DynamoDB Local exited before it answered on %s: %s", e.Endpoint, out)
		case <-ctx.Done():
			return fmt.Errorf("DynamoDB Local did not answer on %s: %w: %s", e.Endpoint, ctx.Err(), out)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop ends the engine and whatever it started, and waits for it to exit: a
// SIGTERM to its process group, a SIGKILL 5 seconds later. It may be called
// again, and on a nil Engine, where it does nothing.
func (e *Engine) Stop() {
	if e == nil {
		return
	}
	select {
	case <-e.exited:
		return // no signal: its pid may be another process's by now
	default:
	}
	terminate(e.pid)
	select {
	case <-e.exited:
	case <-time.After(5 * time.Second):
		kill(e.pid)
		<-e.exited
	}
}

// Ping reports whether something answers HTTP at endpoint.
// DynamoDB Local answers a bare GET (with 400).
func Ping(ctx context.Context, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail keeps the last few KB a child wrote, for an error message.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailSize = 4096

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailSize {
		t.b = t.b[len(t.b)-tailSize:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.b) == 0 {
		return "(no output)"
	}
	return strings.TrimSpace(string(t.b))
}
