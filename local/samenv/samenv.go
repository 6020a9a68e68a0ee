// Package samenv starts what the functions need beside them under the SAM
// CLI (`sam local start-api`, `sam local invoke`): a DynamoDB engine with the
// template's tables and the payment provider simulator, listening where
// SAM's containers can reach them, and writes the --env-vars file that
// points each function at them. `make sam-local-env` runs it; the functions
// themselves run in SAM's containers.
package samenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/local/template"
)

// File is where make sam-local-env writes the env-vars file.
const File = "local/.run/sam-env.json"

// ProviderSecret is the simulator's secret key, as make run's.
const ProviderSecret = "sk_test_local"

// Options of Start. Zero values take the defaults shown; a zero port is a
// free one (make sam-local-env gives 8000 and 12111).
type Options struct {
	Root         string // the project root, holding template.yaml (found from the working directory)
	Bind         string // the address the engine and simulator listen on: "0.0.0.0"
	Host         string // the name of this machine from inside a container: "127.0.0.1" (--docker-network host), "host.docker.internal" (Docker Desktop)
	DynamoPort   int    // the engine's; ignored when DYNAMODB_ENDPOINT names an engine already running
	ProviderPort int    // the simulator's
	Lease        string // IDEM_LEASE, "3s"
	TablePrefix  string // "sam-"
	Progress     io.Writer
}

// Services are the running engine and simulator, and the env-vars for SAM.
type Services struct {
	Endpoint    string            // the engine, as this machine reaches it
	Engine      string            // which engine: "DynamoDB Local 3.3.1"
	ProviderURL string            // the simulator, as this machine reaches it
	Tables      map[string]string // logical id to local name
	Sim         *provider.Simulator
	// EnvVars is the --env-vars file: per function logical id, its
	// variables with the values that reach the services from a container.
	EnvVars map[string]map[string]string
	closers []func()
}

// Start brings the engine and the simulator up and makes the tables.
func Start(ctx context.Context, o Options) (_ *Services, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	s := &Services{Tables: map[string]string{}}
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
	enginePort, err := s.startEngine(ctx, o)
	if err != nil {
		return nil, err
	}
	step("local DynamoDB engine at %s (%s)", s.Endpoint, s.Engine)
	if err := s.createTables(ctx, tpl.Tables, o.TablePrefix, step); err != nil {
		return nil, err
	}
	s.Sim = provider.New(ProviderSecret, slog.New(slog.DiscardHandler))
	if err := s.Sim.ConfigureSearch(""); err != nil { // Stripe's worst case unless PROVIDER_SIM_SEARCH says otherwise
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(o.Bind, fmt.Sprint(o.ProviderPort)))
	if err != nil {
		return nil, fmt.Errorf("payment provider simulator: %w", err)
	}
	srv := &http.Server{Handler: s.Sim, ReadHeaderTimeout: 10 * time.Second}
	// Serve returns ErrServerClosed once stopped, and any other failure shows
	// in the requests sent to it; a Close that fails at shutdown leaves
	// nothing to serve either way.
	go func() { _ = srv.Serve(l) }()
	s.closers = append(s.closers, func() { _ = srv.Close() })
	providerPort := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	s.ProviderURL = "http://" + net.JoinHostPort("127.0.0.1", providerPort)
	step("payment provider simulator at %s (every charge it makes: GET %s/_sim/effects)", s.ProviderURL, s.ProviderURL)
	s.EnvVars, err = EnvVars(tpl, s.Tables, map[string]string{
		dynamo.EndpointEnv:    "http://" + net.JoinHostPort(o.Host, enginePort),
		"PROVIDER_LOCAL_URL":  "http://" + net.JoinHostPort(o.Host, providerPort), // PROVIDER_BASE_URL takes https:// only
		"PROVIDER_SECRET_KEY": ProviderSecret,
		"IDEM_LEASE":          o.Lease,
	})
	return s, err
}

// startEngine uses the engine DYNAMODB_ENDPOINT names, or starts DynamoDB Local on
// the bind address, and returns the engine's port.
func (s *Services) startEngine(ctx context.Context, o Options) (string, error) {
	if ep := os.Getenv(dynamo.EndpointEnv); ep != "" {
		if err := dynamo.Ping(ctx, ep); err != nil {
			return "", fmt.Errorf("%s=%s does not answer: %w", dynamo.EndpointEnv, ep, err)
		}
		u, err := url.Parse(ep)
		if err != nil || u.Port() == "" {
			return "", fmt.Errorf("%s=%s: want http://host:port", dynamo.EndpointEnv, ep)
		}
		s.Endpoint, s.Engine = ep, "the engine at "+dynamo.EndpointEnv
		return u.Port(), nil
	}
	e, err := dynamo.StartAt(ctx, o.Bind, o.DynamoPort, io.Discard)
	if err != nil {
		return "", err
	}
	s.closers = append(s.closers, func() { _ = e.Stop() }) // its error is always nil
	s.Endpoint, s.Engine = e.Endpoint, e.String()+", answering "+e.Reach()
	u, _ := url.Parse(e.Endpoint)
	return u.Port(), nil
}

func (s *Services) createTables(ctx context.Context, tables []template.Table, prefix string, step func(string, ...any)) error {
	return dynamo.CreateTables(ctx, dynamo.NewClient(s.Endpoint), tables, prefix, func(t template.Table, name string) {
		s.Tables[t.LogicalID] = name
		step("table %s as %s", t.LogicalID, name)
	})
}

// Close stops what Start started, last first.
func (s *Services) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// EnvVars is the --env-vars file for tpl: for each function, every variable
// the template declares for it, a reference to a table resolved to the
// table's local name, a variable of local set to its value, the others at
// the template's value. The SAM CLI passes a function only the variables
// its template declares and drops the rest of the file unsaid, so a local
// variable that a function needs and does not declare is an error here:
// DYNAMODB_ENDPOINT and IDEM_LEASE for every function, PROVIDER_SECRET_KEY
// and PROVIDER_LOCAL_URL for one that declares PROVIDER_BASE_URL.
func EnvVars(tpl *template.Template, tables, local map[string]string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, fn := range tpl.Functions {
		need := []string{dynamo.EndpointEnv, "IDEM_LEASE"}
		if _, ok := fn.Env["PROVIDER_BASE_URL"]; ok {
			need = append(need, "PROVIDER_SECRET_KEY", "PROVIDER_LOCAL_URL")
		}
		for _, k := range need {
			if _, ok := fn.Env[k]; !ok {
				return nil, fmt.Errorf("%s does not declare %s in template.yaml: the SAM CLI would drop it from --env-vars", fn.LogicalID, k)
			}
		}
		vars := map[string]string{}
		for k, v := range fn.Env {
			if target, ok := strings.CutPrefix(v, template.RefPrefix); ok {
				name, found := tables[target]
				if !found {
					return nil, fmt.Errorf("%s: %s refers to %s, which has no local value", fn.LogicalID, k, target)
				}
				v = name
			}
			if lv, ok := local[k]; ok {
				v = lv
			}
			vars[k] = v
		}
		out[fn.LogicalID] = vars
	}
	return out, nil
}

// Write writes the env-vars file, indented, keys sorted.
func Write(path string, vars map[string]map[string]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(vars, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Functions lists the logical ids of vars, sorted.
func Functions(vars map[string]map[string]string) []string {
	ids := make([]string, 0, len(vars))
	for id := range vars {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (o *Options) defaults() (err error) {
	if o.Root == "" {
		if o.Root, err = template.ProjectDir(); err != nil {
			return err
		}
	}
	if o.Bind == "" {
		o.Bind = "0.0.0.0"
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Lease == "" {
		o.Lease = "3s"
	}
	if o.TablePrefix == "" {
		o.TablePrefix = "sam-"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return nil
}
