// Command ddblocal starts a local DynamoDB engine with the tables of
// template.yaml and keeps it up until interrupted.
//
// It starts moto's server on a free loopback port, or uses the engine at
// DYNAMODB_ENDPOINT (DynamoDB Local, say) when that is set. It creates each
// AWS::DynamoDB::Table of the template as "local-<LogicalId>", turns on TTL
// where the template does, and writes the variables the functions read
// (DYNAMODB_ENDPOINT, IDEMPOTENCY_TABLE, ...) to an env file.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/idemkeys/idem/local/dynamo"
)

func main() {
	envFile := flag.String("env-file", "local/.run/dynamo.env", "where to write the variables that point the functions at the engine")
	once := flag.Bool("once", false, "create the tables and exit, leaving no engine running (needs DYNAMODB_ENDPOINT)")
	flag.Parse()
	if err := run(*envFile, *once); err != nil {
		fmt.Fprintln(os.Stderr, "ddblocal:", err)
		os.Exit(1)
	}
}

func run(envFile string, once bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if once && os.Getenv(dynamo.EndpointEnv) == "" {
		return fmt.Errorf("-once needs %s: there would be no engine left to hold the tables", dynamo.EndpointEnv)
	}

	start := time.Now()
	fmt.Println("• local DynamoDB engine: starting…")
	logPath := filepath.Join(filepath.Dir(envFile), "moto.log")
	if err := os.MkdirAll(filepath.Dir(envFile), 0o755); err != nil {
		return err
	}
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
	what := "moto_server (log: " + logPath + ")"
	if engine == nil {
		what = "the engine at " + dynamo.EndpointEnv
	}
	fmt.Printf("  ready at %s: %s, %v\n", endpoint, what, time.Since(start).Round(time.Millisecond))

	tpl, err := dynamo.FindTemplate(".")
	if err != nil {
		return err
	}
	tables, err := dynamo.TemplateTables(tpl)
	if err != nil {
		return err
	}
	db := dynamo.NewClient(endpoint)
	env := []string{dynamo.EndpointEnv + "=" + endpoint}
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
		env = append(env, dynamo.EnvName(t.LogicalID)+"="+name)
	}
	if err := os.WriteFile(envFile, []byte(strings.Join(env, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("• wrote %s:\n", envFile)
	for _, e := range env {
		fmt.Println("    " + e)
	}
	if once {
		return nil
	}
	fmt.Println("Ready. Ctrl-C stops the engine.")
	<-ctx.Done()
	fmt.Println("\n• stopping…")
	return nil
}
