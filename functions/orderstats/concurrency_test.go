package main

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestManyInvocationsInOneProcess holds the consumer to Lambda Managed
// Instances, where one process runs many invocations at once: 32 batches
// handled concurrently by the real handler (store.SQS around the projector,
// as main builds it), 40 orders of 4 scopes each delivered in two batches,
// what a batch reports failed delivered again as SQS would, until none
// fails. Each order counts once in its scope. Run it under -race.
func TestManyInvocationsInOneProcess(t *testing.T) {
	c := newConsumer(t)
	handle := c.handle
	const orders, scopes, batches = 40, 4, 32
	var all []events.SQSMessage
	for i := range orders {
		scope := fmt.Sprint("s", i%scopes)
		all = append(all, events.SQSMessage{MessageId: fmt.Sprint("m", i), Body: change(t, streamChange{fmt.Sprint("e", i), "INSERT", scope, fmt.Sprint("o", i)}, 1)})
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
		if got := c.count(t, fmt.Sprint("s", s)); got != fmt.Sprint(orders/scopes) {
			t.Errorf("scope s%d: order_count %s, want %d (each order once)", s, got, orders/scopes)
		}
	}
}
