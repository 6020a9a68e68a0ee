// Command run starts the local stack and keeps it up until interrupted: a
// DynamoDB engine with the tables of template.yaml, and the payment provider
// simulator.
//
// The engine is moto's server on a free loopback port, or the engine at
// DYNAMODB_ENDPOINT (DynamoDB Local, say) when that is set. Each
// AWS::DynamoDB::Table of the template is created as "local-<LogicalId>",
// with TTL where the template has it. How to reach it all is written to
// local/.run/stack.env, which `make invoke` reads.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/local/stack"
)

// ProviderSecret is the simulator's secret key; it guards nothing real.
const ProviderSecret = "sk_test_local"

func main() {
	providerAddr := flag.String("provider", "127.0.0.1:12111", "address of the payment provider simulator")
	flag.Parse()
	if err := run(*providerAddr); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		os.Exit(1)
	}
}

func run(providerAddr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tplPath, err := dynamo.FindTemplate(".")
	if err != nil {
		return err
	}
	root := filepath.Dir(tplPath)
	runDir := filepath.Join(root, filepath.Dir(stack.EnvFile))
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}

	start := time.Now()
	fmt.Println("• local DynamoDB engine: starting…")
	logPath := filepath.Join(runDir, "moto.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	endpoint, engine, err := dynamo.Ensure(ctx, logf)
	if err != nil {
		return err
	}
	defer engine.Stop()
	what := "moto_server, log in " + logPath
	if engine == nil {
		what = "the engine at " + dynamo.EndpointEnv
	}
	fmt.Printf("  ready at %s (%s), %v\n", endpoint, what, time.Since(start).Round(time.Millisecond))

	tables, err := dynamo.TemplateTables(tplPath)
	if err != nil {
		return err
	}
	db := dynamo.NewClient(endpoint)
	vars := map[string]string{dynamo.EndpointEnv: endpoint}
	for _, t := range tables {
		name := "local-" + t.LogicalID
		if err := t.Create(ctx, db, name); err != nil {
			return err
		}
		ttl := ""
		if t.TTLAttribute != "" {
			ttl = ", TTL on " + t.TTLAttribute
		}
		fmt.Printf("• table %s as %s%s\n", t.LogicalID, name, ttl)
		vars[stack.RefVar+t.LogicalID] = name
	}

	sim := provider.New(ProviderSecret, slog.New(slog.NewTextHandler(os.Stdout, nil)))
	l, err := net.Listen("tcp", providerAddr)
	if err != nil {
		return fmt.Errorf("payment provider simulator: %w (another make run?)", err)
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	vars["PROVIDER_BASE_URL"] = "http://" + l.Addr().String()
	vars["PROVIDER_SECRET_KEY"] = ProviderSecret
	fmt.Printf("• payment provider simulator at %s (effects: GET %s/_sim/effects)\n", vars["PROVIDER_BASE_URL"], vars["PROVIDER_BASE_URL"])

	envPath := filepath.Join(root, stack.EnvFile)
	if err := stack.WriteEnv(envPath, vars); err != nil {
		return err
	}
	fmt.Printf("• wrote %s\n", stack.EnvFile)
	fmt.Println("Ready. In another terminal: make invoke FN=charge EVENT=events/charge-create.json")
	fmt.Println("Ctrl-C stops everything.")
	<-ctx.Done()
	fmt.Println("\n• stopping…")
	if err := os.Remove(envPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
