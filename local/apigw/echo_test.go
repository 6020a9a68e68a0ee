package apigw_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
)

// echoBootstrap is testdata/echo built for the Runtime Interface Emulator,
// by TestMain.
var echoBootstrap string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "apigw-echo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	echoBootstrap = filepath.Join(dir, "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", echoBootstrap, "./testdata/echo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build testdata/echo: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir) // best effort: a temporary directory
	os.Exit(code)
}

// echoRoutes are the routes of testdata/echo.
var echoRoutes = []template.Route{{Method: "POST", Path: "/event"}, {Method: "GET", Path: "/event/{rest+}"}, {Method: "POST", Path: "/output"}, {Method: "POST", Path: "/size"}, {Method: "POST", Path: "/sleep"}}

// echoAPI serves testdata/echo behind the local API with auth, on a real
// HTTP server, until t ends; it returns the server's URL.
func echoAPI(t *testing.T, auth *apigw.Authorizer) string {
	t.Helper()
	root, err := template.ProjectDir()
	if err != nil {
		t.Fatal(err)
	}
	emulator, err := rie.Binary(root)
	if err != nil {
		t.Fatal(err)
	}
	return serveEcho(t, auth, emulator, 10)
}

// serveEcho serves testdata/echo, with timeout seconds, under emulator.
func serveEcho(t *testing.T, auth *apigw.Authorizer, emulator string, timeout int) string {
	t.Helper()
	fn := apigw.Function{Def: &template.Function{LogicalID: "Echo", Timeout: timeout, Routes: echoRoutes}, Bootstrap: echoBootstrap}
	api, err := apigw.New(emulator, []apigw.Function{fn}, auth, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(func() { srv.Close(); api.Close() })
	return srv.URL
}
