// Package rie runs a function's built bootstrap under the AWS Lambda Runtime
// Interface Emulator, the program `sam local` runs inside its containers,
// with no container: the same Runtime API, the same invoke path.
package rie

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/idemkeys/idem/local/proc"
)

// Module is the emulator's module and version, installed with go install.
const Module = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// Binary returns the path of aws-lambda-rie: $AWS_LAMBDA_RIE, then
// <root>/bin/tools, then PATH; if none has it, it is installed into
// <root>/bin/tools with go install (the Go module proxy has it).
func Binary(root string) (string, error) {
	if p := os.Getenv("AWS_LAMBDA_RIE"); p != "" {
		return p, nil
	}
	tools := filepath.Join(root, "bin", "tools")
	local := filepath.Join(tools, "aws-lambda-rie")
	if _, err := os.Stat(local); err == nil {
		return local, nil
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p, nil
	}
	cmd := exec.Command("go", "install", Module)
	cmd.Env = append(os.Environ(), "GOBIN="+tools, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("install the Runtime Interface Emulator (go install %s): %w\n%s", Module, err, out)
	}
	return local, nil
}

// Runtime is one emulated Lambda execution environment running a bootstrap.
type Runtime struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
	output *proc.Output
}

// Options of Start.
type Options struct {
	Env     []string      // the function's environment, KEY=value
	Timeout time.Duration // the function's timeout (default 10s)
	Output  io.Writer     // the function's and the emulator's logs (default: kept for Logs)
	// MaxConcurrency, above 0, is the environment's
	// AWS_LAMBDA_MAX_CONCURRENCY, as on Lambda Managed Instances: the
	// emulator runs its managed-instances mode, with that many runtime
	// workers, and aws-lambda-go as many invoke loops in the one process.
	// That mode runs a zip function's bootstrap from /var/task alone, as
	// user 993, whatever its command line says; so the emulator gets a
	// mount namespace of its own (unshare, from util-linux) in which
	// /var/task is the bootstrap's directory on a /var of its own. It
	// needs root.
	MaxConcurrency int
}

// taskRoot mounts $0 on /var/task, over an empty /var, and runs the rest.
const taskRoot = `mount -t tmpfs -o mode=0755 rie /var && mkdir /var/task && mount --bind "$0" /var/task && exec "$@"`

// Start starts the emulator with bootstrap on free loopback ports. The
// function initialises on the first invocation, as in Lambda (with
// MaxConcurrency, at once, as a managed instance does).
func Start(ctx context.Context, emulator, bootstrap string, o Options) (*Runtime, error) {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	invokePort, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	apiPort, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(bootstrap)
	if err != nil {
		return nil, err
	}
	name, args := emulator, []string{"--log-level", "error",
		"--runtime-interface-emulator-address", "127.0.0.1:" + strconv.Itoa(invokePort),
		"--runtime-api-address", "127.0.0.1:" + strconv.Itoa(apiPort), abs}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(int(o.Timeout/time.Second)),
		"AWS_LAMBDA_FUNCTION_NAME=" + filepath.Base(filepath.Dir(abs)),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
	}
	if o.MaxConcurrency > 0 {
		if os.Geteuid() != 0 {
			return nil, errors.New("rie: MaxConcurrency (the emulator's managed-instances mode) needs root: a mount namespace for /var/task, and the function run as user 993")
		}
		name, args = "unshare", append([]string{"--mount", "--propagation", "private", "/bin/sh", "-c", taskRoot, filepath.Dir(abs), emulator}, args[:len(args)-1]...)
		env = append(env, "AWS_LAMBDA_MAX_CONCURRENCY="+strconv.Itoa(o.MaxConcurrency))
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = filepath.Dir(abs)
	cmd.Env = append(env, o.Env...)
	r := &Runtime{url: "http://127.0.0.1:" + strconv.Itoa(invokePort) + "/2015-03-31/functions/function/invocations", cmd: cmd, exited: make(chan struct{}), output: &proc.Output{}}
	out := o.Output
	if out == nil {
		out = r.output
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = proc.Attr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", emulator, err)
	}
	go func() { _ = cmd.Wait(); close(r.exited) }() // exited reports the exit and the output says why; the status (mostly Stop's SIGKILL) adds nothing
	if err := r.waitListening(ctx, invokePort); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

func (r *Runtime) waitListening(ctx context.Context, port int) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 100*time.Millisecond); err == nil {
			_ = c.Close() // only the port's answer was wanted
			return nil
		}
		select {
		case <-r.exited:
			return fmt.Errorf("the emulator exited: %s", r.output.String())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return errors.New("the emulator did not listen within 10s")
}

// Invoke sends one event and returns the function's response payload. A
// function error comes back as the emulator reports it, an errorMessage and
// errorType object, with ErrFunction; a function that ran past its timeout,
// which the emulator reports as bare text (Task timed out after 10.00
// seconds) or a Sandbox.Timedout error, with ErrTimeout.
func (r *Runtime) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	defer func() { _ = resp.Body.Close() }() // what was read is kept; a failed close loses nothing of it
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if timedOut(body) {
		return body, fmt.Errorf("%w: %s", ErrTimeout, body)
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("invoke: emulator answered %d: %s", resp.StatusCode, body)
	}
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte(`{"errorMessage"`)) || bytes.HasPrefix(bytes.TrimSpace(body), []byte(`{"errorType"`)) {
		return body, fmt.Errorf("%w: %s", ErrFunction, body)
	}
	return body, nil
}

// ErrFunction is a function that failed its invocation (returned an error,
// panicked, or timed out).
var ErrFunction = errors.New("function error")

// ErrTimeout is a function that ran past its timeout; it is an ErrFunction.
var ErrTimeout = fmt.Errorf("%w: timed out", ErrFunction)

// timedOut says whether body is the emulator's report of a timeout.
func timedOut(body []byte) bool {
	b := bytes.TrimPrefix(bytes.TrimSpace(body), []byte(`"`))
	return bytes.HasPrefix(b, []byte("Task timed out after ")) || bytes.Contains(b, []byte(`"errorType":"Sandbox.Timedout"`))
}

// Logs returns what the function and the emulator printed, when no Output
// was given.
func (r *Runtime) Logs() string { return r.output.String() }

// Pid is the emulator's process id; the function runs as its child.
func (r *Runtime) Pid() int { return r.cmd.Process.Pid }

// Exited reports whether the emulator has exited (been killed, say).
func (r *Runtime) Exited() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// Stop kills the function's process and the emulator, with SIGKILL: to the
// function, a crash in the middle of whatever it was doing.
func (r *Runtime) Stop() {
	if r.cmd.Process == nil {
		return
	}
	// The emulator runs the function in a process group of its own. Each
	// kill is best effort: ESRCH is a process or group already gone.
	for _, pid := range proc.Children(r.cmd.Process.Pid) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.exited
}
