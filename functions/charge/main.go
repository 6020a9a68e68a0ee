// Command charge is the Lambda function behind POST /charges and
// GET /charges/{id}: a card charge that happens once per Idempotency-Key.
//
// Configuration, read once here:
//
//	IDEMPOTENCY_TABLE, CHARGES_TABLE,
//	ATTEMPTS_TABLE                     the tables (template.yaml sets them)
//	SCOPE_CLAIM                        the JWT claim that names the caller (default sub)
//	IDEM_LEASE                         a shorter idempotency lease, for local runs (e.g. 3s)
//	PROVIDER_BASE_URL                  the Stripe-compatible API, an https:// URL
//	PROVIDER_LOCAL_URL                 the local provider simulator, over plain HTTP: a local run only (with DYNAMODB_ENDPOINT)
//	PROVIDER_SECRET_KEY                its secret key, or else
//	PROVIDER_SECRET_PARAMETER          the SSM SecureString parameter holding it
//	AWS_SAM_LOCAL                      "true" under the SAM CLI only: the scope from the unverified bearer token (samlocal.Serve)
//	DYNAMODB_ENDPOINT                  a local DynamoDB engine, for local runs
//	OTEL_EXPORTER_OTLP_ENDPOINT        traces over OTLP/HTTP to a collector (the ADOT layer's), or else
//	TRACES_FILE                        traces appended to a file, as JSON lines (make run's); neither: off (config.Tracing)
package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/idemkeys/idem/functions/internal/config"
	"github.com/idemkeys/idem/functions/internal/emf"
	"github.com/idemkeys/idem/functions/internal/samlocal"
	"github.com/idemkeys/idem/functions/internal/tracing"
	"github.com/idemkeys/idem/pkg/idem"
)

func main() {
	ctx := context.Background()
	tr, err := config.Tracing(ctx, "charge")
	if err != nil {
		fmt.Fprintln(os.Stderr, "charge:", err)
		os.Exit(1)
	}
	s, err := newServer(ctx, tr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "charge:", err)
		os.Exit(1)
	}
	lambda.Start(s.handler(tr))
}

// handler is the function's handler as lambda.Start runs it: its routes
// (under the SAM CLI, AWS_SAM_LOCAL=true, whose start-api skips the JWT
// authorizer, with the scope from the unverified bearer token), each
// invocation a span when traced (tr; nil: off).
func (s *server) handler(tr *tracing.Tracing) tracing.HTTPHandler {
	return tracing.HTTP(tr, samlocal.Serve(s.routes(), s.scopeClaim, s.log))
}

// newServer is the function as its cold start makes it, from the
// environment, tracing with tr (nil: off); dbOpts adjust its DynamoDB
// client (a test's recorder).
func newServer(ctx context.Context, tr *tracing.Tracing, dbOpts ...func(*dynamodb.Options)) (*server, error) {
	log := config.Logger()
	cfg, db, err := config.AWS(ctx, tr, dbOpts...)
	if err != nil {
		return nil, err
	}
	charges, err := config.Env("CHARGES_TABLE")
	if err != nil {
		return nil, err
	}
	attempts, err := config.Env("ATTEMPTS_TABLE")
	if err != nil {
		return nil, err
	}
	baseURL, err := providerURL()
	if err != nil {
		return nil, err
	}
	secret, err := providerSecret(ctx, cfg)
	if err != nil {
		return nil, err
	}
	store, err := config.Store(ctx, db, log, tr, func(o *idem.Options) { o.Metrics = emf.New(os.Stdout, "charge") })
	if err != nil {
		return nil, err
	}
	return &server{
		store: store, db: db, table: charges, attempts: attempts, scopeClaim: config.ScopeClaim(), log: log, now: time.Now,
		payments: newStripePayments(baseURL, secret, log, tr.Transport(nil)),
	}, nil
}

// providerURL is the provider's base URL: PROVIDER_BASE_URL, which must be
// https://, as the secret key goes with every request; or, in a local run
// alone (a local engine named by DYNAMODB_ENDPOINT), the simulator's
// PROVIDER_LOCAL_URL, which is plain HTTP on the machine. A deployed
// function has neither local variable set (template.yaml declares both
// empty), so it reaches the provider over TLS or not at all.
func providerURL() (string, error) {
	if local := os.Getenv("PROVIDER_LOCAL_URL"); local != "" {
		if os.Getenv("DYNAMODB_ENDPOINT") == "" {
			return "", errors.New("PROVIDER_LOCAL_URL is for a local run only (with DYNAMODB_ENDPOINT); deployed, the provider is PROVIDER_BASE_URL, over https")
		}
		return local, nil
	}
	base, err := config.Env("PROVIDER_BASE_URL")
	if err != nil {
		return "", err
	}
	if u, err := url.Parse(base); err != nil || u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("PROVIDER_BASE_URL %q is not an https:// URL: the secret key goes with every request", base)
	}
	return base, nil
}

// providerSecret is the provider's secret key: PROVIDER_SECRET_KEY (the
// local simulator's), or else the SSM parameter PROVIDER_SECRET_PARAMETER
// names, which must be a SecureString: a String or StringList parameter
// keeps the key unencrypted, shown to whoever may read parameters, so the
// function refuses to start on one rather than use the key.
func providerSecret(ctx context.Context, cfg aws.Config) (string, error) {
	if secret := os.Getenv("PROVIDER_SECRET_KEY"); secret != "" {
		return secret, nil
	}
	name, err := config.Env("PROVIDER_SECRET_PARAMETER")
	if err != nil {
		return "", fmt.Errorf("set PROVIDER_SECRET_KEY or PROVIDER_SECRET_PARAMETER: %w", err)
	}
	out, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return "", fmt.Errorf("read the provider secret from SSM %s: %w", name, err)
	}
	if out.Parameter == nil || out.Parameter.Type != ssmtypes.ParameterTypeSecureString {
		var kind ssmtypes.ParameterType
		if out.Parameter != nil {
			kind = out.Parameter.Type
		}
		return "", fmt.Errorf("SSM parameter %s is a %q parameter, not a SecureString: the provider's secret key must be kept encrypted; "+
			"put it again with --type SecureString", name, kind)
	}
	return aws.ToString(out.Parameter.Value), nil
}
