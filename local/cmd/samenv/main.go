// Command samenv starts, for the SAM CLI, a DynamoDB engine with the tables
// of template.yaml and the payment provider simulator, on an address SAM's
// containers can reach, writes the env-vars file for `sam local start-api
// --env-vars` and `sam local invoke --env-vars`, prints a dev token and the
// commands to run, and keeps the services up until interrupted.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/samenv"
)

func main() {
	var o samenv.Options
	flag.StringVar(&o.Bind, "bind", "0.0.0.0", "address the engine and the simulator listen on")
	flag.StringVar(&o.Host, "host", "127.0.0.1", "this machine as a container sees it: 127.0.0.1 with --docker-network host (Linux), host.docker.internal (Docker Desktop)")
	flag.IntVar(&o.DynamoPort, "dynamo-port", 8000, "the engine's port")
	flag.IntVar(&o.ProviderPort, "provider-port", 12111, "the simulator's port")
	flag.StringVar(&o.Lease, "lease", "3s", "the functions' idempotency lease (IDEM_LEASE)")
	out := flag.String("out", samenv.File, "where to write the env-vars file")
	flag.Parse()
	if err := run(o, *out); err != nil {
		fmt.Fprintln(os.Stderr, "samenv:", err)
		os.Exit(1)
	}
}

func run(o samenv.Options, out string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Progress = os.Stdout
	s, err := samenv.Start(ctx, o)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := samenv.Write(out, s.EnvVars); err != nil {
		return err
	}
	fmt.Printf("• wrote %s for %v\n", out, samenv.Functions(s.EnvVars))
	token, err := devToken()
	if err != nil {
		return err
	}
	fmt.Printf(`
Ready. In another shell, from the project root:
  sam build
  sam local start-api --env-vars %s --docker-network host --region us-east-1 \
    --parameter-overrides JwtIssuer=https://issuer.local.invalid JwtAudience=idem-local
  (Docker Desktop: without --docker-network host, after make sam-local-env SAM_HOST=host.docker.internal)

A dev token for user-demo-1 (under the SAM CLI the functions read it unverified):
  export TOKEN=%s

  curl -si http://127.0.0.1:3000/charges -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: sam-1" \
       -H "Content-Type: application/json" -d '{"amount":1050,"currency":"usd","payment_method":"pm_card_visa"}'
  curl -s %s/_sim/effects

Ctrl-C stops the engine and the simulator.
`, out, token, s.ProviderURL)
	<-ctx.Done()
	fmt.Println("\n• stopping…")
	return nil
}

// devToken mints a dev token for user-demo-1, valid 24h, with make run's issuer
// and audience, signed with a key of its own: under the SAM CLI nothing
// verifies it.
func devToken() (string, error) {
	secret := make([]byte, 32)
	rand.Read(secret)
	a := &apigw.Authorizer{Secret: secret, Issuer: devstack.Issuer, Audiences: []string{devstack.Audience}}
	return a.Token("user-demo-1", 24*time.Hour)
}
