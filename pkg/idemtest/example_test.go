package idemtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// A duplicate request is answered with the first one's response, and the
// work runs once.
func ExampleNewStore() {
	t := exampleT() // in a test, the test's own t
	defer t.done()

	s := idemtest.NewStore(t)
	req := idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"}
	runs := 0
	work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		runs++
		return idem.Response{StatusCode: 201, Body: []byte(`{"id":"o1"}`)}, nil
	}
	first, _ := s.Do(context.Background(), req, work)
	again, err := s.Do(context.Background(), req, work)
	fmt.Println(first.Response.StatusCode, again.Response.StatusCode, again.Replayed, err, runs)
	// Output: 201 201 true <nil> 1
}

// A commit that lands and loses its answer: the Store finds its own commit
// and answers as if nothing had been lost; the order is written once.
func ExampleFaults_Inject() {
	t := exampleT() // in a test, the test's own t
	defer t.done()

	s := idemtest.NewStore(t)
	orders := idemtest.CreateTable(t, s.Client, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer})
	runs := 0
	res, err := s.Do(context.Background(), idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"},
		func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			runs++
			tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(orders), Item: map[string]types.AttributeValue{
				"id": &types.AttributeValueMemberS{Value: "o1"},
			}}}, nil)
			return idem.Response{StatusCode: 201}, nil
		})
	fmt.Println(res.Response.StatusCode, err, runs, s.Faults.Injected(idemtest.TransactWriteItems))
	// Output: 201 <nil> 1 1
}

// DoAtomic's commit is one TransactWriteItems with the work's business
// writes, and a PutItem when it added none: the fault that loses its answer
// names that call. Either way the Store finds its own commit.
func ExampleFaults_Inject_atomic() {
	t := exampleT() // in a test, the test's own t
	defer t.done()

	s := idemtest.NewStore(t)
	orders := idemtest.CreateTable(t, s.Client, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	ctx := context.Background()
	withAWrite := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(orders), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "o1"},
		}}}, nil)
		return idem.Response{StatusCode: 201}, nil
	}
	alone := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 200}, nil
	}

	s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer})
	res, err := s.DoAtomic(ctx, idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"}, withAWrite)
	fmt.Println(res.Response.StatusCode, err, s.Faults.Injected(idemtest.TransactWriteItems))

	s.Faults.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.LostAnswer})
	res, err = s.DoAtomic(ctx, idem.Request{Scope: "alice", Key: "ping-1", Fingerprint: "v1"}, alone)
	fmt.Println(res.Response.StatusCode, err, s.Faults.Injected(idemtest.PutItem))
	fmt.Println(s.Faults.Commits(), "commits")
	// Output:
	// 201 <nil> 1
	// 200 <nil> 1
	// 2 commits
}

// Calls counts calls in every role, and a duplicate makes another call on
// each path: a refused claim under Do, a refused transaction under
// DoAtomic. Commits counts the work taking effect, once on both.
func ExampleFaults_Commits() {
	t := exampleT() // in a test, the test's own t
	defer t.done()

	s := idemtest.NewStore(t)
	orders := idemtest.CreateTable(t, s.Client, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	createOrder := func(id string) idem.Work {
		return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(orders), Item: map[string]types.AttributeValue{
				"id": &types.AttributeValueMemberS{Value: id},
			}}}, nil)
			return idem.Response{StatusCode: 201}, nil
		}
	}
	ctx := context.Background()
	for _, path := range []struct {
		name string
		do   func(context.Context, idem.Request, idem.Work) (idem.Result, error)
	}{{"Do", s.Do}, {"DoAtomic", s.DoAtomic}} {
		transactions, commits := s.Faults.Calls(idemtest.TransactWriteItems), s.Faults.Commits()
		key := "order-" + path.name
		for range 2 { // a request and its duplicate
			if _, err := path.do(ctx, idem.Request{Scope: "alice", Key: key, Fingerprint: "v1"}, createOrder(key)); err != nil {
				fmt.Println(err)
			}
		}
		fmt.Println(path.name, s.Faults.Calls(idemtest.TransactWriteItems)-transactions, "transactions,", s.Faults.Commits()-commits, "commit")
	}
	// Output:
	// Do 1 transactions, 1 commit
	// DoAtomic 2 transactions, 1 commit
}

// A Lambda killed with its commit in flight leaves its lease live: the
// same request gets ErrInProgress (a door's 409) until the lease runs out,
// then takes the key over and creates the order, once. The dead
// invocation lapsed nothing (no UpdateItem).
func ExampleInvoke() {
	t := exampleT() // in a test, the test's own t
	defer t.done()

	s := idemtest.NewStore(t, func(o *idem.Options) { o.Lease = 10 * time.Second })
	orders := idemtest.CreateTable(t, s.Client, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	ctx, req := context.Background(), idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"}
	createOrder := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(orders), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "o1"},
		}}}, nil)
		return idem.Response{StatusCode: 201}, nil
	}

	s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.CrashBefore})
	crashed := idemtest.Invoke(ctx, func(ctx context.Context) { _, _ = s.Do(ctx, req, createOrder) }) // Do never returns: the invocation dies
	fmt.Println("crashed:", crashed, "lapses:", s.Faults.Calls(idemtest.UpdateItem))

	_, err := s.Do(ctx, req, createOrder)
	fmt.Println("within the lease:", errors.Is(err, idem.ErrInProgress))

	s.Clock.Advance(10 * time.Second)
	res, err := s.Do(ctx, req, createOrder)
	fmt.Println("after it:", res.Response.StatusCode, err, "commits:", s.Faults.Commits())
	// Output:
	// crashed: true lapses: 0
	// within the lease: true
	// after it: 201 <nil> commits: 1
}

// A Lambda killed during its work, after it called a payment provider:
// the takeover runs the work again and calls the provider again, with the
// same idem.DownstreamKey, so the provider charges once.
func ExampleCrash() {
	t := exampleT() // in a test, the test's own t
	defer t.done()

	s := idemtest.NewStore(t, func(o *idem.Options) { o.Lease = 10 * time.Second })
	ctx, req := context.Background(), idem.Request{Scope: "alice", Key: "pay-1", Fingerprint: "v1"}
	charges := map[string]int{} // the provider's view: calls by idempotency key
	pay := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		key := idem.DownstreamKey("provider", req.Scope, req.Key)
		if charges[key]++; charges[key] == 1 {
			idemtest.Crash(ctx) // killed after the provider charged, before the answer is stored
		}
		return idem.Response{StatusCode: 201}, nil
	}

	fmt.Println("crashed:", idemtest.Invoke(ctx, func(ctx context.Context) { _, _ = s.Do(ctx, req, pay) })) // Do never returns: the invocation dies
	s.Clock.Advance(10 * time.Second)
	res, err := s.Do(ctx, req, pay)
	fmt.Println(res.Response.StatusCode, err, "commits:", s.Faults.Commits())
	fmt.Println("the provider got", len(charges), "key,", charges[idem.DownstreamKey("provider", req.Scope, req.Key)], "calls")
	// Output:
	// crashed: true
	// 201 <nil> commits: 1
	// the provider got 1 key, 2 calls
}

// A holder that stalls past its lease, as a crashed Lambda does, is taken
// over once the clock passes the lease, and is fenced when it comes back.
func ExampleClock_Advance() {
	t := exampleT() // in a test, the test's own t
	defer t.done()

	s := idemtest.NewStore(t, func(o *idem.Options) { o.Lease = 10 * time.Second })
	ctx, req := context.Background(), idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"}
	claimed, resume, stalled := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		_, err := s.Do(ctx, req, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			close(claimed)
			<-resume
			return idem.Response{StatusCode: 201}, nil
		})
		stalled <- err
	}()
	<-claimed
	work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 201}, nil
	}
	_, err := s.Another().Do(ctx, req, work)
	fmt.Println(errors.Is(err, idem.ErrInProgress))
	s.Clock.Advance(11 * time.Second)
	res, err := s.Another().Do(ctx, req, work)
	fmt.Println(res.Response.StatusCode, err)
	close(resume)
	fmt.Println(errors.Is(<-stalled, idem.ErrLeaseLost))
	// Output:
	// true
	// 201 <nil>
	// true
}

// Faults around a client of one's own, for a Store built by hand: its claim
// is throttled past the SDK's retries.
func ExampleNewFaults() {
	t := exampleT() // in a test, the test's own t
	defer t.done()

	db := idemtest.Client(t)
	faults := idemtest.NewFaults(t, db)
	store, err := idem.New(faults, idemtest.Table(t, db))
	if err != nil {
		t.Fatal(err)
	}
	faults.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Throttle})
	_, err = store.Do(context.Background(), idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"},
		func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			return idem.Response{StatusCode: 201}, nil
		})
	var throttled *types.ProvisionedThroughputExceededException
	fmt.Println(errors.As(err, &throttled), faults.Injected(idemtest.PutItem))
	// Output: true 1
}

// The idempotency table is the one idem.New wants, TTL on.
func ExampleTable() {
	t := exampleT() // in a test, the test's own t
	defer t.done()

	db := idemtest.Client(t)
	table := idemtest.Table(t, db)
	ttl, err := db.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(ttl.TimeToLiveDescription.TimeToLiveStatus, aws.ToString(ttl.TimeToLiveDescription.AttributeName))
	// Output: ENABLED expires_at
}

// A table for the handler's business writes, named fresh for the test.
func ExampleCreateTable() {
	t := exampleT() // in a test, the test's own t
	defer t.done()

	orders := idemtest.CreateTable(t, idemtest.Client(t), &dynamodb.CreateTableInput{
		TableName: aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("scope"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("order_id"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("scope"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("order_id"), KeyType: types.KeyTypeRange},
		},
	})
	fmt.Println(strings.HasPrefix(orders, "orders-"))
	// Output: true
}

// The engine's URL, for what the test starts itself: a Lambda under the
// Runtime Interface Emulator, say, given DYNAMODB_ENDPOINT.
func ExampleEndpoint() {
	endpoint, err := idemtest.Endpoint()
	if err != nil {
		panic(err) // in a test: t.Fatal(err)
	}
	env := []string{"DYNAMODB_ENDPOINT=" + endpoint}
	fmt.Println(strings.HasPrefix(env[0], "DYNAMODB_ENDPOINT=http://"))
	// Output: true
}

// exampleT stands in for the t that a test has and an Example has not: a
// testing.TB whose failures panic, and whose cleanups run at done.
func exampleT() *standIn { return &standIn{} }

type standIn struct {
	testing.TB
	cleanups []func()
}

func (t *standIn) Helper()                           {}
func (t *standIn) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *standIn) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (t *standIn) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *standIn) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (t *standIn) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// An Example, or a program of one's own, has no test to clean up after:
// Open gives it a Store on a fresh table, and a client of the engine.
func ExampleOpen() {
	store, db, err := idemtest.Open(context.Background())
	if err != nil {
		fmt.Println(err) // no engine: ErrNoEngine, naming what to install
		return
	}
	res, err := store.Do(context.Background(), idem.Request{Scope: "alice", Key: "k1", Fingerprint: "v1"},
		func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			return idem.Response{StatusCode: 201}, nil
		})
	fmt.Println(res.Response.StatusCode, err, db != nil)
	// Output: 201 <nil> true
}
