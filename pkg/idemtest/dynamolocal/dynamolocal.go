// Package dynamolocal starts AWS's DynamoDB Local from its jar and stops
// it, for tests and local development.
//
// The engine runs in memory (-inMemory), with one database whatever the
// credentials and Region (-sharedDb), so anyone who reaches it may read and
// write every table. The jar has no option to choose the address it
// listens on, and listens on every address of the machine; so, on Linux,
// Start runs it in a network namespace of its own, where nothing but its
// own loopback exists, and answers for it on 127.0.0.1 (Options.Host) with
// a forwarder of this process: only this machine reaches it. Where no
// namespace can be had (macOS, a Linux without user namespaces), the engine
// listens on every address, and Start says so (Engine.Listens, and a line
// on Options.Log or standard error).
//
// The namespace's helper is this program itself, run again with an
// environment variable that this package's init recognises: a program
// that imports dynamolocal serves as its own helper, and needs nothing
// installed beyond Java.
//
// On Unix the engine runs in a process group of its own, which Stop ends
// whole; on Linux the kernel also kills it when the process that started it
// dies, so that a test binary that exits early leaves no Java behind.
package dynamolocal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
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
	// Port is the port it answers on. Zero draws one from FreePort, and
	// draws again, three times in all, when the engine (or, in a namespace,
	// its forwarder) cannot listen on it: a free port can be taken before
	// it is bound.
	Port int
	// FreePort draws a free port; nil takes one the kernel picks on
	// 127.0.0.1.
	FreePort func() (int, error)
	// Host is the address the engine answers on: 127.0.0.1 unless set;
	// "0.0.0.0" for containers to reach it. It holds where the engine has
	// a network namespace of its own, and is only the Endpoint's name
	// elsewhere.
	Host string
	// HostNetwork runs the engine in this machine's own network, listening
	// on every address, as it runs where no namespace can be had.
	HostNetwork bool
	// Log receives the engine's output; nil drops it. Start's errors end
	// with the last of it either way.
	Log io.Writer
}

// Engine is a DynamoDB Local that Start started.
type Engine struct {
	Endpoint string // http://127.0.0.1:Port, or Options.Host's address
	Port     int
	// Listens is where the engine can be reached: Options.Host and Port
	// ("127.0.0.1:8000") when it has a network namespace of its own, else
	// "*:8000", every address of this machine.
	Listens string
	pid     int
	exited  chan struct{}
	fwd     *forwarder // in front of an engine in a namespace; nil otherwise
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
		return start(ctx, java, jar, o, o.Port)
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
		e, err := start(ctx, java, jar, o, port)
		if err == nil || try == 3 || ctx.Err() != nil {
			return e, err
		}
	}
}

// start runs the jar on port, in a network namespace of its own unless
// o.HostNetwork or none can be had, and waits until it answers.
func start(ctx context.Context, java, jar string, o Options, port int) (*Engine, error) {
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	args := []string{"-Djava.library.path=" + filepath.Join(filepath.Dir(jar), "DynamoDBLocal_lib"), "-jar", jar,
		"-inMemory", "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(port)}
	out := &tail{}
	var w io.Writer = out
	if o.Log != nil {
		w = io.MultiWriter(out, o.Log)
	}
	e := &Engine{Endpoint: "http://" + net.JoinHostPort(endpointHost(host), strconv.Itoa(port)), Port: port, exited: make(chan struct{})}
	var err error
	if o.HostNetwork {
		err = errHostNetwork
	} else {
		err = e.runIsolated(java, jar, args, net.JoinHostPort(host, strconv.Itoa(port)), w)
	}
	if errors.Is(err, errNoNamespace) || errors.Is(err, errHostNetwork) {
		e.Listens = "*:" + strconv.Itoa(port)
		notice := o.Log
		if notice == nil {
			notice = os.Stderr
		}
		fmt.Fprintf(notice, "dynamolocal: DynamoDB Local listens on every address of this machine (%s), and with -sharedDb it takes any credentials: %v\n", e.Listens, err)
		cmd := command(jar, java, args, w)
		cmd.SysProcAttr = sysProcAttr()
		err = e.run(cmd)
	}
	if err != nil {
		return nil, fmt.Errorf("start DynamoDB Local (%s): %w", jar, err)
	}
	if err := e.waitReady(ctx, out); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

// errHostNetwork: Options.HostNetwork asked for this machine's network.
var errHostNetwork = errors.New("Options.HostNetwork asks for this machine's network")

// errNoNamespace: no network namespace could be had for the engine.
var errNoNamespace = errors.New("no network namespace for it here")

// endpointHost names host in an endpoint: loopback for an unspecified one.
func endpointHost(host string) string {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return host
}

// command is name with args, to run in jar's directory, its output to w.
func command(jar, name string, args []string, w io.Writer) *exec.Cmd {
	cmd := exec.Command(name, args...) //nolint:gosec // G204: the java the kit found, or this program as the namespace's helper, with arguments the kit made
	cmd.Dir = filepath.Dir(jar)
	cmd.Stdout, cmd.Stderr = w, w
	return cmd
}

// run starts cmd and returns once it has started; e.exited closes when it
// exits. The goroutine that starts it keeps its OS thread until the
// process exits: on Linux the process is killed when that thread ends
// (Pdeathsig), which is then only when the whole process does.
func (e *Engine) run(cmd *exec.Cmd) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		e.pid = cmd.Process.Pid
		started <- nil
		_ = cmd.Wait() // how it ended is in its output, which waitReady reports; that it ended is exited
		close(e.exited)
	}()
	return <-started
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
// SIGTERM to its process group, a SIGKILL 5 seconds later (for an engine
// in a namespace, its helper sends these, and is killed itself should it
// not be gone 10 seconds later). It may be called again, and on a nil
// Engine, where it does nothing.
func (e *Engine) Stop() {
	if e == nil {
		return
	}
	defer e.fwd.close()
	select {
	case <-e.exited:
		return // no signal: its pid may be another process's by now
	default:
	}
	terminate(e.pid)
	grace := 5 * time.Second
	if e.fwd != nil {
		grace = 10 * time.Second
	}
	select {
	case <-e.exited:
	case <-time.After(grace):
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
	_ = resp.Body.Close() // an answer is all Ping asks for
	return nil
}

func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }() // only its port was wanted
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
