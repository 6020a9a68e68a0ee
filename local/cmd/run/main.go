// Command run starts the whole API on this machine, as `sam local
// start-api` would serve it, and keeps it up until interrupted: a DynamoDB
// engine with the tables of template.yaml, the payment provider simulator,
// and the HTTP API on 127.0.0.1:3000 invoking the built bootstraps under the
// Lambda Runtime Interface Emulator, with openapi.yaml at /openapi.yaml and
// /openapi.json. How to reach it all goes to local/.run/stack.env, which
// make invoke and make demo read; the functions' spans go to
// local/.run/traces.jsonl, which make traces prints.
//
// Ctrl-C or SIGTERM stops it: every process it started ends, it prints one
// line and exits 0. Under make, Ctrl-C reaches this command alone (see
// foreground), so make too exits 0 rather than reporting an interrupt.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/devstack"
)

func main() {
	restore := foreground()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	restore()
	os.Exit(code)
}

// run starts the stack as args say and serves until SIGINT or SIGTERM:
// 0 then, 2 for bad flags, 1 when the stack could not start.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o devstack.Options
	fs.StringVar(&o.APIAddr, "api", "127.0.0.1:3000", "address of the HTTP API")
	fs.StringVar(&o.ProviderAddr, "provider", "127.0.0.1:12111", "address of the payment provider simulator")
	fs.StringVar(&o.Lease, "lease", "3s", "the functions' idempotency lease (IDEM_LEASE); short, so a crash's takeover comes soon")
	fs.StringVar(&o.BinDir, "bin", "", "where the built <fn>/bootstrap are (default: bin under the project root, as make build leaves them)")
	fs.StringVar(&o.TablePrefix, "table-prefix", "", "prefix of the tables' names (default local-)")
	fs.StringVar(&o.TracesFile, "traces", devstack.TracesFile, "the file the functions append their spans to, relative to the project root (\"\": no tracing)")
	envFile := fs.String("env", devstack.EnvFile, "the env file to write, relative to the project root")
	quiet := fs.Bool("quiet", false, "do not log each request")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Progress = stdout
	if !*quiet {
		o.Log = slog.New(slog.NewTextHandler(stdout, nil))
	}
	if err := serve(ctx, o, *envFile, stdout); err != nil {
		if ctx.Err() != nil { // stopped while starting: what had started is down
			fmt.Fprintln(stdout, "\n• stopped before it was ready; bye")
			return 0
		}
		fmt.Fprintln(stderr, "run:", err)
		return 1
	}
	return 0
}

// serve starts the stack, says how to use it, and stops it when ctx ends.
func serve(ctx context.Context, o devstack.Options, envFile string, stdout io.Writer) error {
	s, err := devstack.Start(ctx, o)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			s.Close()
		}
	}()
	if err := publishOpenAPI(s.API, s.Root); err != nil {
		return err
	}
	envPath := filepath.Join(s.Root, envFile)
	if err := devstack.WriteEnv(envPath, s.Vars); err != nil {
		return err
	}
	defer func() { _ = os.Remove(envPath) }() // best effort: the next make run writes it anew
	token, err := s.Auth.Token("user-demo-1", 24*time.Hour)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, `• wrote %s
• the API's description: %s/openapi.yaml (or /openapi.json)

Ready: %s
A dev token for user-demo-1, valid 24h:
  export TOKEN=%s

Try (the second call replays the first: same body, Idempotent-Replayed: true, one charge):
  curl -si %s/charges -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: demo-1" \
       -H "Content-Type: application/json" -d '{"amount":1050,"currency":"usd","payment_method":"pm_card_visa"}'
  curl -si %s/charges -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: demo-1" \
       -H "Content-Type: application/json" -d '{"amount":1050,"currency":"usd","payment_method":"pm_card_visa"}'
  curl -s %s/_sim/effects
%s
Or the guided tour: make demo.  Ctrl-C stops everything.
`, envFile, s.APIURL, s.APIURL, token, s.APIURL, s.APIURL, s.ProviderURL, tracesHint(s))
	<-ctx.Done()
	start := time.Now()
	s.Close()
	stopped = true
	fmt.Fprintf(stdout, "\n• stopped: the API, the simulator and the engine are down (%.1fs); bye\n", time.Since(start).Seconds())
	return nil
}

// tracesHint says how to see the requests' traces, when they are kept.
func tracesHint(s *devstack.Stack) string {
	if s.TracesFile == "" {
		return ""
	}
	return "\nEach request's trace, the last two (the charge and its replay) as trees:\n  make traces N=2\n"
}

// publishOpenAPI has api serve root's openapi.yaml.
func publishOpenAPI(api *apigw.Server, root string) error {
	doc, err := os.ReadFile(filepath.Join(root, "openapi.yaml"))
	if err != nil {
		return err
	}
	return api.Publish(doc)
}
