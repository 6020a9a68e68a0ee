package devstack_test

import (
	"context"
	"crypto/rand"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/demo"
	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/template/templatetest"
)

// TestMain starts the engine, unless -short, under which every test here starts the stack, and skips.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(dynamotest.Main(m))
}

// startStack starts a stack for t on the functions built for it, on free
// ports, its tables under prefix and a random suffix, with o's other
// options; it stops when t ends.
func startStack(t *testing.T, prefix string, o devstack.Options) *devstack.Stack {
	t.Helper()
	_, bin := templatetest.Built(t)
	o.BinDir = bin
	o.TablePrefix = prefix + strings.ToLower(rand.Text()[:6]) + "-"
	o.APIAddr, o.ProviderAddr = "127.0.0.1:0", "127.0.0.1:0"
	s, err := devstack.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// tokenFor is a token the stack accepts for sub, valid an hour.
func tokenFor(t *testing.T, s *devstack.Stack, sub string) string {
	t.Helper()
	tok, err := s.Auth.Token(sub, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestDemoScenariosEndToEnd drives every scenario of make demo through the
// local HTTP API: real HTTP, the JWT authorizer, each function's bootstrap
// under the Runtime Interface Emulator, DynamoDB on the local engine, and
// the provider simulator counting charges. A crash is a SIGKILL of the
// function's process.
func TestDemoScenariosEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end, make demo's walk against the whole local stack: make test runs it")
	}
	s := startStack(t, "e2e-", devstack.Options{})
	var out strings.Builder
	results, err := demo.Run(context.Background(), demo.Target{
		APIURL: s.APIURL, ProviderURL: s.ProviderURL,
		Token: func(sub string) (string, error) { return s.Auth.Token(sub, time.Hour) },
	}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(results) == 0 {
		t.Fatal("no scenario ran")
	}
	for _, r := range results {
		if !r.OK() {
			t.Errorf("%s: %d charges (want %d), %v", r.Name, r.Charges, r.WantCharges, r.Err)
		}
	}
	if t.Failed() {
		t.Log(out.String())
	}
}
