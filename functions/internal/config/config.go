// Package config is the functions' configuration at cold start: required
// environment variables, the logger, tracing, the AWS clients, the
// idempotency Store and the scope claim.
package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/functions/internal/tracing"
	"github.com/idemkeys/idem/pkg/idem"
)

// Env returns a required variable, or an error naming it.
func Env(name string) (string, error) {
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("environment variable %s is not set", name)
	}
	return v, nil
}

// Logger is the functions' logger: JSON lines on stdout, which CloudWatch
// Logs keeps per invocation.
func Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stdout, nil))
}

// AWS loads the AWS configuration and a DynamoDB client. DYNAMODB_ENDPOINT,
// when set, points the client at a local engine; optFns adjust the client
// further (a test's recording HTTP client). With tracing on, every client
// made from the configuration traces its calls (tracing.Tracing.AWS).
func AWS(ctx context.Context, tr *tracing.Tracing, optFns ...func(*dynamodb.Options)) (aws.Config, *dynamodb.Client, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, nil, fmt.Errorf("load AWS config: %w", err)
	}
	tr.AWS(&cfg.APIOptions)
	db := dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		if ep := os.Getenv("DYNAMODB_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	}}, optFns...)...)
	return cfg, db, nil
}

// Store returns the idempotency store on the table in IDEMPOTENCY_TABLE,
// logging to log, tracing on tr's provider (off: none). IDEM_LEASE, when
// set (a Go duration such as "3s"), shortens the lease, so that a local
// demonstration of a crash need not wait out the default; the lease is cut
// to the Lambda's deadline in any case.
// It refuses to start on a global table (idem.CheckSingleRegion): one
// DescribeTable call at cold start. A describe that fails (the network, a
// missing permission) is logged and does not stop the function: only a
// table known to be replicated does.
func Store(ctx context.Context, db *dynamodb.Client, log *slog.Logger, tr *tracing.Tracing, optFns ...func(*idem.Options)) (*idem.Store, error) {
	table, err := Env("IDEMPOTENCY_TABLE")
	if err != nil {
		return nil, err
	}
	// A global table breaks the guarantee: refuse to start on one.
	if err := idem.CheckSingleRegion(ctx, db, table); errors.Is(err, idem.ErrMisconfigured) {
		return nil, err
	} else if err != nil {
		log.Warn("idem: could not check that the idempotency table is in one Region", "table", table, "error", err.Error())
	}
	var lease time.Duration
	if v := os.Getenv("IDEM_LEASE"); v != "" {
		if lease, err = time.ParseDuration(v); err != nil || lease <= 0 {
			return nil, fmt.Errorf("IDEM_LEASE=%q is not a positive duration", v)
		}
	}
	return idem.New(db, table, append([]func(*idem.Options){func(o *idem.Options) { o.Logger, o.Lease, o.TracerProvider = log, lease, tr.Provider() }}, optFns...)...)
}

// ScopeClaim is the JWT claim that names the caller: SCOPE_CLAIM, or "sub".
func ScopeClaim() string {
	if c := os.Getenv("SCOPE_CLAIM"); c != "" {
		return c
	}
	return "sub"
}
