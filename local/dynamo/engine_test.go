package dynamo_test

import (
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamo"
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

// StartAt runs the pinned DynamoDB Local, in memory with one database, on a
// port of proc.FreePort's (below the ephemeral range), and names the
// endpoint by host, loopback for an unspecified one; Stop ends it.
func TestStartAtRunsThePinnedEngineAndStopEndsIt(t *testing.T) {
	if os.Getenv(dynamo.JarEnv) == "" {
		t.Skip("the engine is the one DYNAMODB_ENDPOINT names: there is no jar here to start")
	}
	ctx := context.Background()
	e, err := dynamo.StartAt(ctx, "0.0.0.0", 0, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	u, err := url.Parse(e.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if port, _ := strconv.Atoi(u.Port()); u.Hostname() != "127.0.0.1" || port >= 32768 {
		t.Errorf("Endpoint %s: want 127.0.0.1, on a port drawn below the ephemeral range", e.Endpoint)
	}
	if want := "DynamoDB Local " + dynamo.Version; e.String() != want {
		t.Errorf("the engine is %q, want %q", e.String(), want)
	}
	// In memory, one database for all: a table made with the stack's
	// credentials is seen with others, and no database file is written.
	tb := aws.String("shared")
	_, err = dynamo.NewClient(e.Endpoint).CreateTable(ctx, &dynamodb.CreateTableInput{TableName: tb, BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}})
	if err != nil {
		t.Fatal(err)
	}
	other := dynamodb.New(dynamodb.Options{Region: "eu-west-1", BaseEndpoint: aws.String(e.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("someoneelse", "secret", "")})
	if _, err := other.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: tb}); err != nil {
		t.Errorf("another access key and Region do not see the table: %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(filepath.Dir(e.Jar), "*.db")); len(files) > 0 {
		t.Errorf("the engine wrote %v: it is not in memory", files)
	}
	e.Stop()
	if dynamo.Ping(ctx, e.Endpoint) == nil {
		t.Error("the engine answers after Stop")
	}
}
