package devstack_test

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/demo"
	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/template/templatetest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

// TestDemoScenariosEndToEnd drives every scenario of make demo through the
// local HTTP API: real HTTP, the JWT authorizer, each function's bootstrap
// under the Runtime Interface Emulator, DynamoDB on the local engine, and
// the provider simulator counting charges. A crash is a SIGKILL of the
// function's process.
func TestDemoScenariosEndToEnd(t *testing.T) {
	_, bin := templatetest.Built(t)
	s, err := devstack.Start(context.Background(), devstack.Options{
		BinDir:       bin,
		TablePrefix:  "e2e-" + strings.ToLower(rand.Text()[:6]) + "-",
		APIAddr:      "127.0.0.1:0",
		ProviderAddr: "127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
