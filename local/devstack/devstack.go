// Package devstack starts the whole API on this machine: a DynamoDB engine
// with the template's tables, the payment provider simulator, and the HTTP
// API serving the template's routes on the functions' bootstraps under the
// Lambda Runtime Interface Emulator. `make run` and the end-to-end tests
// start it the same way. It owns the env file (EnvFile) through which
// make invoke and make demo reach the running stack.
package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// The local JWT authorizer's issuer and audience, and the provider's secret.
const (
	Issuer         = "https://issuer.local.invalid"
	Audience       = "idem-local"
	ProviderSecret = "sk_test_local"
)

// Options of Start. Zero values take the defaults shown.
type Options struct {
	Root         string // the project root, holding template.yaml (found from the working directory)
	BinDir       string // where <fn>/bootstrap are (Root/bin, as make build leaves them)
	TablePrefix  string // "local-"
	APIAddr      string // "127.0.0.1:3000"
	ProviderAddr string // "127.0.0.1:12111"
	Lease        string // IDEM_LEASE for the functions ("3s": demonstrations wait less)
	Concurrency  int    // execution environments per function (4)
	// FaultProxy puts a faultproxy between the functions and the engine,
	// for tests that hold or break their DynamoDB calls.
	FaultProxy bool
	// TracesFile, when set, is where the functions append their spans, a
	// JSON line each (TracesVar; go run ./local/cmd/traces prints them),
	// emptied at Start; relative to Root. Unset, they trace nothing.
	TracesFile string
	Progress   io.Writer
	Log        *slog.Logger
}

// Stack is a running local stack.
type Stack struct {
	Root                          string
	APIURL, ProviderURL, Endpoint string
	Tables                        map[string]string // logical id to local name
	Sim                           *provider.Simulator
	Auth                          *apigw.Authorizer
	API                           *apigw.Server
	Faults                        *faultproxy.Proxy // with Options.FaultProxy
	TracesFile                    string            // with Options.TracesFile: its absolute path
	Vars                          map[string]string // what EnvFile holds
	closers                       []func()
	progress                      io.Writer
}

// Start brings the stack up, printing progress as it goes: the engine and
// the tables, the provider simulator, then the API.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	tpl, err := template.Load(filepath.Join(o.Root, "template.yaml"))
	if err != nil {
		return nil, err
	}
	s := &Stack{Root: o.Root, Tables: map[string]string{}, progress: o.Progress}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.startEngine(ctx, o); err != nil {
		return nil, err
	}
	if err := s.createTables(ctx, tpl.Tables, o.TablePrefix); err != nil {
		return nil, err
	}
	if err := s.startProvider(o); err != nil {
		return nil, err
	}
	if err := s.startTraces(o); err != nil {
		return nil, err
	}
	if err := s.startAPI(tpl, o); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Stack) step(format string, args ...any) {
	fmt.Fprintf(s.progress, "• "+format+"\n", args...)
}

// startEngine starts DynamoDB Local (its log in the env file's directory) or reaches
// the engine at DYNAMODB_ENDPOINT, with a fault proxy in front if asked.
func (s *Stack) startEngine(ctx context.Context, o Options) error {
	start := time.Now()
	s.step("local DynamoDB engine: starting…")
	runDir := filepath.Join(o.Root, filepath.Dir(EnvFile))
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(runDir, "dynamodb-local.log"))
	if err != nil {
		return err
	}
	s.closers = append(s.closers, func() { _ = logf.Close() }) // at shutdown: the engine has written what it will; nothing is left to tell
	endpoint, engine, err := dynamo.Ensure(ctx, logf)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, func() { _ = engine.Stop() }) // its error is always nil
	s.Endpoint = endpoint
	what := "the engine at " + dynamo.EndpointEnv
	if engine != nil {
		what = engine.String() + ", answering " + engine.Reach() + ", log in " + logf.Name()
	}
	s.step("  ready at %s (%s), %v", endpoint, what, time.Since(start).Round(time.Millisecond))
	s.Vars = map[string]string{dynamo.EndpointEnv: endpoint, "IDEM_LEASE": o.Lease}
	if !o.FaultProxy {
		return nil
	}
	if s.Faults, err = faultproxy.New(endpoint); err != nil {
		return err
	}
	proxyURL, stop, err := serve("127.0.0.1:0", s.Faults)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, stop)
	s.Vars[dynamo.EndpointEnv] = proxyURL
	s.step("fault proxy in front of the engine at %s", proxyURL)
	return nil
}

// createTables makes the template's tables on the engine, each named
// prefix + its logical id.
func (s *Stack) createTables(ctx context.Context, tables []template.Table, prefix string) error {
	return dynamo.CreateTables(ctx, dynamo.NewClient(s.Endpoint), tables, prefix, func(t template.Table, name string) {
		ttl := ""
		if t.TTLAttribute != "" {
			ttl = ", TTL on " + t.TTLAttribute
		}
		s.step("table %s as %s%s", t.LogicalID, name, ttl)
		s.Tables[t.LogicalID] = name
		s.Vars[RefVar+t.LogicalID] = name
	})
}

// startProvider serves the payment provider simulator.
func (s *Stack) startProvider(o Options) error {
	s.Sim = provider.New(ProviderSecret, o.Log)
	if err := s.Sim.ConfigureSearch(""); err != nil { // Stripe's worst case unless PROVIDER_SIM_SEARCH says otherwise
		return err
	}
	providerURL, stop, err := serve(o.ProviderAddr, s.Sim)
	if err != nil {
		return fmt.Errorf("payment provider simulator: %w", err)
	}
	s.closers = append(s.closers, stop)
	s.ProviderURL = providerURL
	s.Vars["PROVIDER_BASE_URL"] = providerURL
	s.Vars["PROVIDER_SECRET_KEY"] = ProviderSecret
	s.step("payment provider simulator at %s (every charge it makes: GET %s/_sim/effects)", providerURL, providerURL)
	return nil
}

// TracesVar is the functions' variable naming the file they append their
// spans to (functions/internal/config.Tracing), and TracesFile make run's,
// relative to the project root: make traces (go run ./local/cmd/traces)
// prints it as trees.
const (
	TracesVar  = "TRACES_FILE"
	TracesFile = "local/.run/traces.jsonl"
)

// startTraces empties the traces file, and has the functions trace to it.
func (s *Stack) startTraces(o Options) error {
	if o.TracesFile == "" {
		return nil
	}
	path := o.TracesFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(o.Root, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return fmt.Errorf("traces file: %w", err)
	}
	s.TracesFile = path
	s.Vars[TracesVar] = path
	rel, err := filepath.Rel(o.Root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = path
	}
	s.step("traces of every request: %s, a JSON line per span (make traces prints them as trees)", rel)
	return nil
}

// startAPI serves the template's routes on the built bootstraps, with a
// fresh secret for the authorizer, and the crash switch beside them.
func (s *Stack) startAPI(tpl *template.Template, o Options) error {
	emulator, err := rie.Binary(o.Root)
	if err != nil {
		return err
	}
	fns, err := s.functions(tpl, o.BinDir)
	if err != nil {
		return err
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	s.Auth = &apigw.Authorizer{Secret: secret, Issuer: Issuer, Audiences: []string{Audience}}
	if s.API, err = apigw.New(emulator, fns, s.Auth, o.Concurrency, o.Log); err != nil {
		return err
	}
	s.closers = append(s.closers, s.API.Close)
	mux := http.NewServeMux()
	mux.Handle("/", s.API)
	// Not an API route: the demonstration's way to kill a function mid-request.
	mux.HandleFunc("POST /_local/crash", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"killed":%d}`, s.API.Crash())
	})
	apiURL, stop, err := serve(o.APIAddr, mux)
	if err != nil {
		return fmt.Errorf("local API: %w", err)
	}
	s.closers = append(s.closers, stop)
	s.APIURL = apiURL
	s.Vars[LocalVar+"API_URL"] = apiURL
	s.Vars[LocalVar+"JWT_SECRET"] = hex.EncodeToString(secret)
	s.step("HTTP API at %s: %d routes of template.yaml, each function under the Lambda Runtime Interface Emulator", apiURL, len(s.API.Routes()))
	return nil
}

// functions are the template's functions as the API runs them: each
// bootstrap built under binDir, each environment pointed at this stack.
func (s *Stack) functions(tpl *template.Template, binDir string) ([]apigw.Function, error) {
	var fns []apigw.Function
	for i := range tpl.Functions {
		fn := &tpl.Functions[i]
		bootstrap := fn.Bootstrap(binDir)
		if _, err := os.Stat(bootstrap); err != nil {
			return nil, fmt.Errorf("%s is not built (make build): %w", bootstrap, err)
		}
		env, err := RuntimeEnv(fn, s.Vars)
		if err != nil {
			return nil, err
		}
		fns = append(fns, apigw.Function{Def: fn, Bootstrap: bootstrap, Env: env})
	}
	return fns, nil
}

// Close stops everything Start started, last first.
func (s *Stack) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// AuthorizerFromVars rebuilds the local authorizer from an env file's vars,
// so another process (make demo) can mint tokens the stack accepts.
func AuthorizerFromVars(vars map[string]string) (*apigw.Authorizer, error) {
	secret, err := hex.DecodeString(vars[LocalVar+"JWT_SECRET"])
	if err != nil || len(secret) == 0 {
		return nil, fmt.Errorf("no %sJWT_SECRET in %s", LocalVar, EnvFile)
	}
	return &apigw.Authorizer{Secret: secret, Issuer: Issuer, Audiences: []string{Audience}}, nil
}

func (o *Options) defaults() (err error) {
	if o.Root == "" {
		if o.Root, err = template.ProjectDir(); err != nil {
			return err
		}
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.Root, "bin")
	}
	if o.TablePrefix == "" {
		o.TablePrefix = "local-"
	}
	if o.APIAddr == "" {
		o.APIAddr = "127.0.0.1:3000"
	}
	if o.ProviderAddr == "" {
		o.ProviderAddr = "127.0.0.1:12111"
	}
	if o.Lease == "" {
		o.Lease = "3s"
	}
	if o.Concurrency == 0 {
		o.Concurrency = 4
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

func serve(addr string, h http.Handler) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("%w (is another make run up?)", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	// Serve returns ErrServerClosed once stopped, and any other failure shows
	// in the requests sent to it; a Close that fails at shutdown leaves
	// nothing to serve either way.
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }, nil
}
