// Package dynamotest gives integration tests a local DynamoDB engine and a
// fresh table per test, defined as in template.yaml.
//
// A package's TestMain calls Main; when DYNAMODB_ENDPOINT is not set, Main
// starts DynamoDB Local for the package's tests and stops it after them, so
// that `go test ./...` needs nothing running beforehand.
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
)

// Main runs the tests of m against a local engine and returns the exit code
// for os.Exit. It sets DYNAMODB_ENDPOINT for the tests when it starts one.
func Main(m *testing.M) int {
	logf, err := os.CreateTemp("", "dynamodb-local-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, "dynamotest:", err)
		return 1
	}
	defer os.Remove(logf.Name())
	defer logf.Close()
	endpoint, engine, err := dynamo.Ensure(context.Background(), logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dynamotest:", err)
		return 1
	}
	defer engine.Stop()
	os.Setenv(dynamo.EndpointEnv, endpoint)
	return m.Run()
}

// Client returns a client for the engine that Main chose.
func Client(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	ep := os.Getenv(dynamo.EndpointEnv)
	if ep == "" {
		t.Fatalf("dynamotest: %s is not set: call dynamotest.Main from TestMain", dynamo.EndpointEnv)
	}
	return dynamo.NewClient(ep, optFns...)
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
		db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}
