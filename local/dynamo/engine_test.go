package dynamo_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	defer func() { _ = e.Stop() }() // its error is always nil
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
	_ = e.Stop() // its error is always nil
	if dynamo.Ping(ctx, e.Endpoint) == nil {
		t.Error("the engine answers after Stop")
	}
}

// The engine Start runs answers on 127.0.0.1 and on none of this machine's
// other addresses (`ip -4 addr`): with -sharedDb it takes any credentials,
// so whoever reaches it may read and write every table. Where no network
// namespace can be had (macOS), it listens on every address and says so:
// pkg/idemtest/dynamolocal's tests hold both cases.
func TestTheEngineAnswersOnlyOnLoopback(t *testing.T) {
	if os.Getenv(dynamo.JarEnv) == "" {
		t.Skip("the engine is the one DYNAMODB_ENDPOINT names: there is no jar here to start")
	}
	var others []string
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			others = append(others, n.IP.String())
		}
	}
	if len(others) == 0 {
		t.Skip("this machine has no address but loopback")
	}
	ctx := context.Background()
	e, err := dynamo.Start(ctx, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop() }() // its error is always nil
	u, _ := url.Parse(e.Endpoint)
	if runtime.GOOS != "linux" && strings.HasPrefix(e.Listens, "*:") {
		t.Skipf("no network namespace on %s: the engine listens on %s (%s)", runtime.GOOS, e.Listens, e.Reach())
	}
	if want := "127.0.0.1:" + u.Port(); e.Listens != want || e.Reach() != "on "+want+" only" {
		t.Errorf("Listens %q (%s), want %s only", e.Listens, e.Reach(), want)
	}
	if _, err := dynamo.NewClient(e.Endpoint).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("no answer on %s: %v", e.Endpoint, err)
	}
	for _, ip := range others {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, u.Port()), 2*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("the engine answers on %s:%s, not only on loopback", ip, u.Port())
		}
	}
}

// DynamoDB Local runs TTL as DynamoDB does: it deletes an expired item in
// the background (which is why the tests' clocks start from the real time,
// docs/local.md). DynamoDB itself promises that deletion within days, so no
// guarantee of pkg/idem waits on it (an expired record is absent to every
// call while it is still there: pkg/idem's TestExpiredRecordIsTreatedAsAbsent).
// This checks the engine alone, on an engine of this test binary's own: on
// a shared one (DYNAMODB_ENDPOINT), busy with other binaries' tables, the
// sweep's time says nothing, and the test is skipped. Its bound is generous
// for a busy machine.
func TestTheEngineDeletesExpiredItemsInTheBackground(t *testing.T) {
	if dynamotest.Shared() {
		t.Skip("the engine is the one DYNAMODB_ENDPOINT names, shared: its sweep's time is not this test's to judge")
	}
	db := dynamotest.Client(t)
	tb := dynamotest.Table(t, db, "IdempotencyTable") // TTL on expires_at, as in template.yaml
	ctx := context.Background()
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "expired"}}
	item := map[string]types.AttributeValue{"pk": key["pk"], "expires_at": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)}}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb), Item: item}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tb), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Item) == 0 {
			t.Logf("deleted %v after it was written", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatal("the engine's TTL did not delete an item expired an hour ago within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
