// Command run starts the whole API on this machine, as `sam local
// start-api` would serve it, and keeps it up until interrupted: a DynamoDB
// engine with the tables of template.yaml, the payment provider simulator,
// and the HTTP API on 127.0.0.1:3000 invoking the built bootstraps under the
// Lambda Runtime Interface Emulator. How to reach it all goes to
// local/.run/stack.env, which make invoke and make demo read.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/idemkeys/idem/local/devstack"
)

func main() {
	var o devstack.Options
	flag.StringVar(&o.APIAddr, "api", "127.0.0.1:3000", "address of the HTTP API")
	flag.StringVar(&o.ProviderAddr, "provider", "127.0.0.1:12111", "address of the payment provider simulator")
	flag.StringVar(&o.Lease, "lease", "3s", "the functions' idempotency lease (IDEM_LEASE); short, so a crash's takeover comes soon")
	quiet := flag.Bool("quiet", false, "do not log each request")
	flag.Parse()
	if err := run(o, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		os.Exit(1)
	}
}

func run(o devstack.Options, quiet bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Progress = os.Stdout
	if !quiet {
		o.Log = slog.New(slog.NewTextHandler(os.Stdout, nil))
	}
	s, err := devstack.Start(ctx, o)
	if err != nil {
		return err
	}
	defer s.Close()
	envPath := filepath.Join(s.Root, devstack.EnvFile)
	if err := devstack.WriteEnv(envPath, s.Vars); err != nil {
		return err
	}
	defer os.Remove(envPath)
	token, err := s.Auth.Token("user-demo-1", 24*time.Hour)
	if err != nil {
		return err
	}
	fmt.Printf(`• wrote %s

Ready: %s
A dev token for user-demo-1, valid 24h:
  export TOKEN=%s

Try (the second call replays the first: same body, Idempotent-Replayed: true, one charge):
  curl -si %s/charges -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: demo-1" \
       -H "Content-Type: application/json" -d '{"amount":1050,"currency":"usd","payment_method":"pm_card_visa"}'
  curl -si %s/charges -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: demo-1" \
       -H "Content-Type: application/json" -d '{"amount":1050,"currency":"usd","payment_method":"pm_card_visa"}'
  curl -s %s/_sim/effects

Or the guided tour: make demo.  Ctrl-C stops everything.
`, devstack.EnvFile, s.APIURL, token, s.APIURL, s.APIURL, s.ProviderURL)
	<-ctx.Done()
	fmt.Println("\n• stopping…")
	return nil
}
