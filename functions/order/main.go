// Command order is the Lambda function behind POST /orders (once per
// Idempotency-Key), PUT /orders/{order_id} (natural idempotency on a
// client-chosen id) and GET /orders/{order_id}.
//
// Configuration, read once here:
//
//	IDEMPOTENCY_TABLE, ORDERS_TABLE   the tables (template.yaml sets them)
//	SCOPE_CLAIM                       the JWT claim that names the caller (default sub)
//	IDEM_LEASE                        a shorter idempotency lease, for local runs (e.g. 3s)
//	ORDER_FAST_PATH                   "true": POST /orders in one transaction (idem.Store.DoAtomic)
//	AWS_SAM_LOCAL                     "true" under the SAM CLI only: the scope from the unverified bearer token (samlocal.Serve)
//	DYNAMODB_ENDPOINT                 a local DynamoDB engine, for local runs
//	OTEL_EXPORTER_OTLP_ENDPOINT       traces over OTLP/HTTP to a collector (the ADOT layer's), or else
//	TRACES_FILE                       traces appended to a file, as JSON lines (make run's); neither: off (config.Tracing)
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/functions/internal/config"
	"github.com/idemkeys/idem/functions/internal/emf"
	"github.com/idemkeys/idem/functions/internal/samlocal"
	"github.com/idemkeys/idem/functions/internal/tracing"
	"github.com/idemkeys/idem/pkg/idem"
)

func main() {
	ctx := context.Background()
	tr, err := config.Tracing(ctx, "order")
	if err != nil {
		fmt.Fprintln(os.Stderr, "order:", err)
		os.Exit(1)
	}
	s, err := newServer(ctx, tr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "order:", err)
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
	_, db, err := config.AWS(ctx, tr, dbOpts...)
	if err != nil {
		return nil, err
	}
	orders, err := config.Env("ORDERS_TABLE")
	if err != nil {
		return nil, err
	}
	store, err := config.Store(ctx, db, log, tr, func(o *idem.Options) { o.Metrics = emf.New(os.Stdout, "order") })
	if err != nil {
		return nil, err
	}
	fast := os.Getenv("ORDER_FAST_PATH")
	if fast != "" && fast != "true" && fast != "false" {
		return nil, fmt.Errorf("ORDER_FAST_PATH=%q: want true or false", fast)
	}
	return &server{store: store, db: db, table: orders, scopeClaim: config.ScopeClaim(), fastPath: fast == "true", log: log, now: time.Now}, nil
}
