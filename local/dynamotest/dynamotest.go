// Package dynamotest gives this repository's integration tests a local
// DynamoDB engine, through pkg/idemtest, and a fresh table per test defined
// as in template.yaml.
//
// A package's TestMain calls Main, which chooses the engine before the tests
// and sets DYNAMODB_ENDPOINT for them (tests here read it to reach the
// engine through a proxy, or to hand it to a process they start): when it is
// not set, pkg/idemtest starts the DynamoDB Local that
// local/ensure-dynamodb-local.sh installs into bin/tools (installing it first
// if need be), and stops it after the tests, so that `go test ./...` needs
// nothing running beforehand.
package dynamotest

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// Main runs the tests of m against a local engine and returns the exit code
// for os.Exit. It sets DYNAMODB_ENDPOINT for the tests when it starts one.
func Main(m *testing.M) int {
	shared = os.Getenv(dynamo.EndpointEnv) != ""
	if !shared && os.Getenv(dynamo.JarEnv) == "" {
		jar, err := dynamo.Jar(os.Stderr) // the project's pinned jar, installed by its script if absent
		if err != nil {
			fmt.Fprintln(os.Stderr, "dynamotest:", err)
			return 1
		}
		if err := os.Setenv(dynamo.JarEnv, jar); err != nil {
			fmt.Fprintln(os.Stderr, "dynamotest:", err)
			return 1
		}
	}
	endpoint, err := idemtest.Endpoint()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dynamotest:", err)
		return 1
	}
	if err := os.Setenv(dynamo.EndpointEnv, endpoint); err != nil {
		fmt.Fprintln(os.Stderr, "dynamotest:", err)
		return 1
	}
	return idemtest.Main(m)
}

// shared: the engine is one DYNAMODB_ENDPOINT named, not this binary's own.
var shared bool

// Shared says whether the engine is one that DYNAMODB_ENDPOINT named when
// Main began (started by hand, perhaps serving other test binaries at
// once), rather than one this test binary started for itself.
func Shared() bool { return shared }

// Client returns a client for the engine that Main chose.
func Client(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	return idemtest.Client(t, optFns...)
}

// Table creates a table defined like logicalID in template.yaml under a new
// name, deletes it when the test ends, and returns the name.
func Table(t testing.TB, db *dynamodb.Client, logicalID string) string {
	t.Helper()
	def, err := dynamo.ProjectTable(logicalID)
	if err != nil {
		t.Fatal(err)
	}
	name := "test-" + logicalID + "-" + strings.ToLower(rand.Text()[:10])
	ctx := context.Background()
	if err := def.Create(ctx, db, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) // best effort: a table left behind costs a test engine only space
	})
	return name
}
