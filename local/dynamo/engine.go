// Package dynamo runs and reaches a local DynamoDB engine for development and
// tests: moto's server by default, or any engine (DynamoDB Local included) at
// the address in DYNAMODB_ENDPOINT; it creates the template's tables there.
package dynamo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/local/proc"
)

// EndpointEnv names the variable that points everything here at an engine
// that is already running, instead of starting moto.
const EndpointEnv = "DYNAMODB_ENDPOINT"

// Region and the credentials below are fixed for local engines: DynamoDB Local
// keeps one database per access key and region, so every process of the local
// stack must use the same pair to see the same tables.
const Region = "us-east-1"

const motoVersion = "5.2.1"

// ErrNoEngine says that no engine could be started, and how to get one.
var ErrNoEngine = errors.New("no local DynamoDB engine: install moto's server (pip install 'moto[server]==" + motoVersion + "'), or start DynamoDB Local (docker run -p 8000:8000 amazon/dynamodb-local) and set " + EndpointEnv + "=http://127.0.0.1:8000")

// Engine is a running moto server that this process started.
type Engine struct {
	Endpoint string
	cmd      *exec.Cmd
	exited   chan struct{}
}

// serve is moto's server with its item operations made atomic to each other,
// and transactions that back up only the items they touch (see the file):
// moto alone loses committed writes when a concurrent transaction is
// cancelled, and deep-copies whole tables for every transaction.
//
//go:embed moto_serve.py
var serve []byte

// Start starts moto's server on a free loopback port and waits until it
// answers. Its output goes to logw. The server is killed by Stop, and by the
// kernel if this process dies first, so that no test run leaves it behind.
func Start(ctx context.Context, logw io.Writer) (*Engine, error) {
	return StartAt(ctx, "127.0.0.1", 0, logw)
}

// StartAt is Start listening on host and port: "0.0.0.0" for containers to
// reach it, port 0 for a free one. Endpoint names host, or 127.0.0.1 for an
// unspecified host.
func StartAt(ctx context.Context, host string, port int, logw io.Writer) (*Engine, error) {
	if _, err := exec.LookPath("moto_server"); err != nil {
		return nil, ErrNoEngine
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		return nil, ErrNoEngine
	}
	script, err := os.CreateTemp("", "moto-serve-*.py")
	if err != nil {
		return nil, err
	}
	defer os.Remove(script.Name()) // python has read it once it answers
	if _, err := script.Write(serve); err != nil {
		return nil, err
	}
	script.Close()
	var lastErr error
	for range 3 { // a free port can be taken between choosing and binding it
		p := port
		if p == 0 {
			if p, err = proc.FreePort(); err != nil {
				return nil, err
			}
		}
		e, err := startOn(ctx, python, script.Name(), host, p, logw)
		if err == nil || port != 0 {
			return e, err
		}
		lastErr = err
	}
	return nil, lastErr
}

func startOn(ctx context.Context, python, script, host string, port int, logw io.Writer) (*Engine, error) {
	cmd := exec.Command(python, script, "-H", host, "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = logw, logw
	cmd.SysProcAttr = proc.Attr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start moto_server: %w", err)
	}
	reach := host
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		reach = "127.0.0.1"
	}
	e := &Engine{Endpoint: "http://" + net.JoinHostPort(reach, strconv.Itoa(port)), cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(e.exited) }()
	if err := e.waitReady(ctx, 30*time.Second); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Engine) waitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		if Ping(ctx, e.Endpoint) == nil {
			return nil
		}
		select {
		case <-e.exited:
			return fmt.Errorf("moto_server exited before it answered on %s", e.Endpoint)
		case <-ctx.Done():
			return fmt.Errorf("moto_server did not answer on %s within %v", e.Endpoint, limit)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop kills the server and its process group and waits for it to go.
func (e *Engine) Stop() error {
	if e == nil || e.cmd.Process == nil {
		return nil
	}
	syscall.Kill(-e.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(5 * time.Second):
		syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		<-e.exited
	}
	return nil
}

// Ping reports whether something answers HTTP at endpoint. Both moto and
// DynamoDB Local answer a bare GET.
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

// Ensure returns the endpoint to use: DYNAMODB_ENDPOINT if it is set (and
// answers), else a moto server started now, which the caller must Stop.
func Ensure(ctx context.Context, logw io.Writer) (string, *Engine, error) {
	if ep := os.Getenv(EndpointEnv); ep != "" {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := Ping(pctx, ep); err != nil {
			return "", nil, fmt.Errorf("%s=%s does not answer: %w", EndpointEnv, ep, err)
		}
		return ep, nil, nil
	}
	e, err := Start(ctx, logw)
	if err != nil {
		return "", nil, err
	}
	return e.Endpoint, e, nil
}

// NewClient returns a DynamoDB client for a local engine at endpoint.
func NewClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, optFns...)
}
