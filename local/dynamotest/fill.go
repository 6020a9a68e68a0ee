package dynamotest

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkeys/idem/pkg/idem"
)

// Fill writes n completed idempotency records (keys "fill:k0" onwards in
// scope "fill", expiring at expiresAt, epoch seconds) into table, 25 to a
// BatchWriteItem from 4 writers: the records already in a table when a
// benchmark measures how its size changes the cost.
func Fill(t *testing.T, db *dynamodb.Client, table string, n int, expiresAt int64) {
	t.Helper()
	exp := strconv.FormatInt(expiresAt, 10)
	starts := make(chan int)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range starts {
				if err := fillBatch(db, table, exp, i, min(i+25, n)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < n; i += 25 {
		select {
		case starts <- i:
		case err := <-errs:
			t.Fatal(err)
		}
	}
	close(starts)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

func fillBatch(db *dynamodb.Client, table, exp string, from, to int) error {
	reqs := make([]types.WriteRequest, 0, to-from)
	for j := from; j < to; j++ {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			idem.AttrPK:   &types.AttributeValueMemberS{Value: "4:fill:k" + strconv.Itoa(j)},
			"status":      &types.AttributeValueMemberS{Value: "COMPLETED"},
			"fingerprint": &types.AttributeValueMemberS{Value: "v1:x"},
			"expires_at":  &types.AttributeValueMemberN{Value: exp},
			"response":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"status": &types.AttributeValueMemberN{Value: "201"}, "body": &types.AttributeValueMemberB{Value: []byte(`{"id":"ord_x"}`)}}},
		}}})
	}
	for len(reqs) > 0 {
		out, err := db.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
		if err != nil {
			return err
		}
		reqs = out.UnprocessedItems[table]
	}
	return nil
}
