// Command order is the Lambda function behind POST /orders (once per
// Idempotency-Key), PUT /orders/{order_id} (natural idempotency on a
// client-chosen id) and GET /orders/{order_id}.
//
// Configuration, read once here:
//
//	IDEMPOTENCY_TABLE, ORDERS_TABLE   the tables (template.yaml sets them)
//	SCOPE_CLAIM                       the JWT claim that names the caller (default sub)
//	IDEM_LEASE                        a shorter idempotency lease, for local runs (e.g. 3s)
//	DYNAMODB_ENDPOINT                 a local DynamoDB engine, for local runs
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemkeys/idem/functions/internal/app"
)

func main() {
	s, err := newServer(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "order:", err)
		os.Exit(1)
	}
	lambda.Start(s.routes().Handle)
}

func newServer(ctx context.Context) (*server, error) {
	log := app.Logger()
	_, db, err := app.AWS(ctx)
	if err != nil {
		return nil, err
	}
	orders, err := app.Env("ORDERS_TABLE")
	if err != nil {
		return nil, err
	}
	store, err := app.Store(db, log)
	if err != nil {
		return nil, err
	}
	return &server{store: store, db: db, table: orders, scopeClaim: app.ScopeClaim(), log: log, now: time.Now}, nil
}
