// Command orderstats is the Lambda function that consumes the order events
// queue: each order created, as OrdersTable's stream publishes it through an
// EventBridge pipe, is counted into its owner's stats exactly once, however
// often it is delivered. Failed messages are reported back one by one
// (ReportBatchItemFailures); after five receives SQS moves one to the
// dead-letter queue.
//
// Configuration, read once here:
//
//	IDEMPOTENCY_TABLE, ORDER_STATS_TABLE   the tables (template.yaml sets them)
//	DYNAMODB_ENDPOINT                      a local DynamoDB engine, for local runs
//	OTEL_EXPORTER_OTLP_ENDPOINT            traces over OTLP/HTTP to a collector (the ADOT layer's), or else
//	TRACES_FILE                            traces appended to a file, as JSON lines (make run's); neither: off (config.Tracing)
//
// Traced, each message's span links to the span of the request that
// created the order (the item's traceparent, in the stream record's new
// image: tracing.ItemAttribute).
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/functions/internal/config"
	"github.com/idemkeys/idem/functions/internal/emf"
	"github.com/idemkeys/idem/functions/internal/tracing"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

func main() {
	ctx := context.Background()
	tr, err := config.Tracing(ctx, "orderstats")
	if err != nil {
		fmt.Fprintln(os.Stderr, "orderstats:", err)
		os.Exit(1)
	}
	handle, err := newHandler(ctx, tr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "orderstats:", err)
		os.Exit(1)
	}
	lambda.Start(handle)
}

// newHandler is the function as its cold start makes it, from the
// environment, tracing with tr (nil: off); dbOpts adjust its DynamoDB
// client (a test's recorder).
func newHandler(ctx context.Context, tr *tracing.Tracing, dbOpts ...func(*dynamodb.Options)) (tracing.SQSHandler, error) {
	log := config.Logger()
	_, db, err := config.AWS(ctx, tr, dbOpts...)
	if err != nil {
		return nil, err
	}
	table, err := config.Env("ORDER_STATS_TABLE")
	if err != nil {
		return nil, err
	}
	store, err := config.Store(ctx, db, log, tr, func(o *idem.Options) { o.TTL, o.Metrics = MarkerTTL, emf.New(os.Stdout, "orderstats") })
	if err != nil {
		return nil, err
	}
	p := &projector{db: db, table: table, now: time.Now, log: log}
	return tracing.SQS(tr, idemlambda.SQS(store, p.project, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) {
		o.Scope, o.Key, o.Logger = consumer, eventID, log
	})), nil
}
