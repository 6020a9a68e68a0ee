package testbed

import (
	"context"
	"maps"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/pkg/idem"
)

// API is the client that Counter and Meter wrap: the calls pkg/idem makes.
type API = idem.DynamoDBAPI

// Counter wraps a client, counts its calls by operation, and lets a test
// put a fault in front of any call or rewrite a transaction's answer: for
// what the kit's Faults cannot say (a failure chosen by a function of the
// call, an answer rewritten after the engine acted).
type Counter struct {
	API
	// Before, if set, runs before each call and may fail it instead.
	Before func(op string) error
	// AfterTx, if set, runs after a TransactWriteItems that reached the
	// engine and may replace its answer.
	AfterTx func(ctx context.Context, in *dynamodb.TransactWriteItemsInput, out *dynamodb.TransactWriteItemsOutput, err error) (*dynamodb.TransactWriteItemsOutput, error)

	mu    sync.Mutex
	calls map[string]int
}

// count counts op, then runs Before, whose error fails the call.
func (c *Counter) count(op string) error {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[op]++
	before := c.Before
	c.mu.Unlock()
	if before != nil {
		return before(op)
	}
	return nil
}

// Calls returns the count of each operation so far.
func (c *Counter) Calls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.calls)
	if out == nil {
		out = map[string]int{}
	}
	return out
}

// Total is the number of calls so far.
func (c *Counter) Total() int {
	n := 0
	for _, v := range c.Calls() {
		n += v
	}
	return n
}

// Get is the number of calls of op so far.
func (c *Counter) Get(op string) int { return c.Calls()[op] }

// Reset forgets the counts.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = nil
}

func (c *Counter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := c.count("PutItem"); err != nil {
		return nil, err
	}
	return c.API.PutItem(ctx, in, o...)
}

func (c *Counter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := c.count("GetItem"); err != nil {
		return nil, err
	}
	return c.API.GetItem(ctx, in, o...)
}

func (c *Counter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := c.count("UpdateItem"); err != nil {
		return nil, err
	}
	return c.API.UpdateItem(ctx, in, o...)
}

func (c *Counter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if err := c.count("TransactWriteItems"); err != nil {
		return nil, err
	}
	out, err := c.API.TransactWriteItems(ctx, in, o...)
	if c.AfterTx != nil {
		return c.AfterTx(ctx, in, out, err)
	}
	return out, err
}
