package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/idem"
)

// TestManyInvocationsInOneProcess holds the consumer to Lambda Managed
// Instances, where one process runs many invocations at once: 32 batches
// handled concurrently by the real handler (store.SQS around the projector,
// as main builds it), 40 orders of 4 scopes each delivered in two batches,
// what a batch reports failed delivered again as SQS would, until none
// fails. Each order counts once in its scope. Run it under -race.
func TestManyInvocationsInOneProcess(t *testing.T) {
	raw := dynamotest.Client(t)
	stats := dynamotest.Table(t, raw, "OrderStatsTable")
	store, err := idem.New(raw, dynamotest.Table(t, raw, "IdempotencyTable"))
	if err != nil {
		t.Fatal(err)
	}
	p := &projector{db: raw, table: stats, now: time.Now, log: slog.New(slog.DiscardHandler)}
	handle, err := store.SQS(p.project, func(o *idem.SQSOptions) { o.Scope, o.Key = consumer, eventID })
	if err != nil {
		t.Fatal(err)
	}
	const orders, scopes, batches = 40, 4, 32
	var all []events.SQSMessage
	for i := range orders {
		scope := fmt.Sprint("s", i%scopes)
		all = append(all, events.SQSMessage{MessageId: fmt.Sprint("m", i), Body: change(t, fmt.Sprint("e", i), "INSERT", scope, fmt.Sprint("o", i), 1)})
	}
	pending := make(chan events.SQSMessage, 2*orders)
	for range 2 { // every order delivered twice
		for _, m := range all {
			pending <- m
		}
	}
	for round := 0; len(pending) > 0; round++ {
		if round == 20 {
			t.Fatalf("%d messages still failing after 20 redeliveries", len(pending))
		}
		var work [batches][]events.SQSMessage
		for i := 0; len(pending) > 0; i++ {
			work[i%batches] = append(work[i%batches], <-pending)
		}
		var wg sync.WaitGroup
		for _, batch := range work {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := handle(context.Background(), events.SQSEvent{Records: batch})
				if err != nil {
					t.Error(err)
					return
				}
				for _, f := range resp.BatchItemFailures {
					for _, m := range batch {
						if m.MessageId == f.ItemIdentifier {
							pending <- m // SQS delivers it again
						}
					}
				}
			}()
		}
		wg.Wait()
	}
	for s := range scopes {
		out, err := raw.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(stats), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: fmt.Sprint("s", s)}}})
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := out.Item["order_count"].(*types.AttributeValueMemberN); n == nil || n.Value != fmt.Sprint(orders/scopes) {
			t.Errorf("scope s%d: order_count %v, want %d (each order once)", s, out.Item["order_count"], orders/scopes)
		}
	}
}
