package dynamo_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamotest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

// TestConcurrentWritesSurviveCancelledTransactions holds the local engine to
// what DynamoDB guarantees and every concurrency test here assumes: a
// committed write stays committed while other transactions are cancelled
// around it. An engine that restores a copy of the table on a cancelled
// transaction fails it (BENCHMARKS.md's history names one); DynamoDB Local
// passes.
func TestConcurrentWritesSurviveCancelledTransactions(t *testing.T) {
	db := dynamotest.Client(t)
	tb := dynamotest.Table(t, db, "IdempotencyTable")
	ctx := context.Background()
	key := func(s string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: s}}
	}
	const n = 400
	for i := 0; i < n; i += 2 { // half the transactions will be cancelled
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb), Item: key("k" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	committed := make([]bool, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: aws.String(tb), Item: key("k" + strconv.Itoa(i)), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
					{Put: &types.Put{TableName: aws.String(tb), Item: key("side" + strconv.Itoa(i))}},
				}})
				committed[i] = err == nil
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	lost, commits := 0, 0
	for i, ok := range committed {
		if !ok {
			continue
		}
		commits++
		for _, k := range []string{"k" + strconv.Itoa(i), "side" + strconv.Itoa(i)} {
			out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tb), Key: key(k), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Item) == 0 {
				lost++
			}
		}
	}
	if commits != n/2 {
		t.Errorf("%d transactions committed, want %d", commits, n/2)
	}
	if lost > 0 {
		t.Fatalf("%d writes of committed transactions were lost", lost)
	}
}
