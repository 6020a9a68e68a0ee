// Package devstack starts the whole API on this machine: a DynamoDB engine
// with the template's tables, the payment provider simulator, and the HTTP
// API serving the template's routes on the functions' bootstraps under the
// Lambda Runtime Interface Emulator. `make run` and the end-to-end tests
// start it the same way.
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
	"time"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/faultproxy"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
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
	Vars                          map[string]string // what EnvFile holds
	closers                       []func()
}

// Start brings the stack up, printing progress as it goes.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	s := &Stack{Root: o.Root, Tables: map[string]string{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	step := func(format string, args ...any) { fmt.Fprintf(o.Progress, "• "+format+"\n", args...) }
	tplPath := filepath.Join(o.Root, "template.yaml")
	tpl, err := template.Load(tplPath)
	if err != nil {
		return nil, err
	}

	start := time.Now()
	step("local DynamoDB engine: starting…")
	runDir := filepath.Join(o.Root, filepath.Dir(EnvFile))
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(runDir, "moto.log"))
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { logf.Close() })
	endpoint, engine, err := dynamo.Ensure(ctx, logf)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { engine.Stop() })
	s.Endpoint = endpoint
	what := "moto_server, log in " + logf.Name()
	if engine == nil {
		what = "the engine at " + dynamo.EndpointEnv
	}
	step("  ready at %s (%s), %v", endpoint, what, time.Since(start).Round(time.Millisecond))

	tables := tpl.Tables
	db := dynamo.NewClient(endpoint)
	s.Vars = map[string]string{dynamo.EndpointEnv: endpoint, "IDEM_LEASE": o.Lease}
	if o.FaultProxy {
		if s.Faults, err = faultproxy.New(endpoint); err != nil {
			return nil, err
		}
		proxyURL, stop, err := serve("127.0.0.1:0", s.Faults)
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, stop)
		s.Vars[dynamo.EndpointEnv] = proxyURL
		step("fault proxy in front of the engine at %s", proxyURL)
	}
	for _, t := range tables {
		name := o.TablePrefix + t.LogicalID
		if err := dynamo.Table(t).Create(ctx, db, name); err != nil {
			return nil, err
		}
		ttl := ""
		if t.TTLAttribute != "" {
			ttl = ", TTL on " + t.TTLAttribute
		}
		step("table %s as %s%s", t.LogicalID, name, ttl)
		s.Tables[t.LogicalID] = name
		s.Vars[RefVar+t.LogicalID] = name
	}

	s.Sim = provider.New(ProviderSecret, o.Log)
	providerURL, stop, err := serve(o.ProviderAddr, s.Sim)
	if err != nil {
		return nil, fmt.Errorf("payment provider simulator: %w", err)
	}
	s.closers = append(s.closers, stop)
	s.ProviderURL = providerURL
	s.Vars["PROVIDER_BASE_URL"] = providerURL
	s.Vars["PROVIDER_SECRET_KEY"] = ProviderSecret
	step("payment provider simulator at %s (every charge it makes: GET %s/_sim/effects)", providerURL, providerURL)

	emulator, err := rie.Binary(o.Root)
	if err != nil {
		return nil, err
	}
	var fns []apigw.Function
	for i := range tpl.Functions {
		fn := &tpl.Functions[i]
		bootstrap := fn.Bootstrap(o.BinDir)
		if _, err := os.Stat(bootstrap); err != nil {
			return nil, fmt.Errorf("%s is not built (make build): %w", bootstrap, err)
		}
		env, err := RuntimeEnv(fn, s.Vars)
		if err != nil {
			return nil, err
		}
		fns = append(fns, apigw.Function{Def: fn, Bootstrap: bootstrap, Env: env})
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	s.Auth = &apigw.Authorizer{Secret: secret, Issuer: Issuer, Audience: Audience}
	s.API = apigw.New(emulator, fns, s.Auth, o.Concurrency, o.Log)
	s.closers = append(s.closers, s.API.Close)
	mux := http.NewServeMux()
	mux.Handle("/", s.API)
	// Not an API route: the demonstration's way to kill a function mid-request.
	mux.HandleFunc("POST /_local/crash", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"killed":%d}`, s.API.Crash())
	})
	apiURL, stop, err := serve(o.APIAddr, mux)
	if err != nil {
		return nil, fmt.Errorf("local API: %w", err)
	}
	s.closers = append(s.closers, stop)
	s.APIURL = apiURL
	s.Vars[LocalVar+"API_URL"] = apiURL
	s.Vars[LocalVar+"JWT_SECRET"] = hex.EncodeToString(secret)
	step("HTTP API at %s: %d routes of template.yaml, each function under the Lambda Runtime Interface Emulator", apiURL, len(s.API.Routes()))
	return s, nil
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
	return &apigw.Authorizer{Secret: secret, Issuer: Issuer, Audience: Audience}, nil
}

func (o *Options) defaults() error {
	if o.Root == "" {
		p, err := template.FindTemplate(".")
		if err != nil {
			return err
		}
		o.Root = filepath.Dir(p)
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
	go srv.Serve(l)
	return "http://" + l.Addr().String(), func() { srv.Close() }, nil
}
