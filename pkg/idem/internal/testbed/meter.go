package testbed

import (
	"context"
	"math"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

// Meter wraps a client and prices every call in capacity units by
// DynamoDB's published rules: a write costs 1 WCU per KB of the item
// (rounded up), a failed conditional write too; a strongly consistent read 1
// RCU per 4 KB; a transaction twice the writes it holds. An update or delete
// is priced on the larger of the item before and after, which the meter
// reads itself around the call (those reads are not counted). It also asks
// the engine for ReturnConsumedCapacity and keeps what it reports, for
// comparison.
type Meter struct {
	API

	mu       sync.Mutex
	calls    int
	wcu, rcu float64
	reported float64
}

// Usage is the total since the last Reset.
type Usage struct {
	Calls    int
	WCU, RCU float64
	Reported float64 // what the engine reported, where it did
}

// Usage returns the totals so far.
func (m *Meter) Usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Usage{Calls: m.calls, WCU: m.wcu, RCU: m.rcu, Reported: m.reported}
}

// Reset zeroes the totals.
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls, m.wcu, m.rcu, m.reported = 0, 0, 0, 0
}

func (m *Meter) add(wcu, rcu float64, cc ...types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	m.wcu += wcu
	m.rcu += rcu
	for _, c := range cc {
		if c.CapacityUnits != nil {
			m.reported += *c.CapacityUnits
		}
	}
}

func writeUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }
func readUnits(size int) float64  { return math.Max(1, math.Ceil(float64(size)/4096)) }

// current reads an item's size without counting the read.
func (m *Meter) current(ctx context.Context, table *string, key map[string]types.AttributeValue) int {
	consistent := true
	out, err := m.API.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: &consistent})
	if err != nil {
		return 0
	}
	return idem.ItemSize(out.Item)
}

func (m *Meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.API.PutItem(ctx, in, o...)
	var cc []types.ConsumedCapacity
	if out != nil && out.ConsumedCapacity != nil {
		cc = append(cc, *out.ConsumedCapacity)
	}
	m.add(writeUnits(idem.ItemSize(in.Item)), 0, cc...)
	return out, err
}

func (m *Meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.API.GetItem(ctx, in, o...)
	size := 0
	var cc []types.ConsumedCapacity
	if out != nil {
		size = idem.ItemSize(out.Item)
		if out.ConsumedCapacity != nil {
			cc = append(cc, *out.ConsumedCapacity)
		}
	}
	units := readUnits(size)
	if in.ConsistentRead == nil || !*in.ConsistentRead {
		units /= 2
	}
	m.add(0, units, cc...)
	return out, err
}

func (m *Meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	before := m.current(ctx, in.TableName, in.Key)
	out, err := m.API.UpdateItem(ctx, in, o...)
	after := m.current(ctx, in.TableName, in.Key)
	var cc []types.ConsumedCapacity
	if out != nil && out.ConsumedCapacity != nil {
		cc = append(cc, *out.ConsumedCapacity)
	}
	m.add(writeUnits(max(before, after)), 0, cc...)
	return out, err
}

func (m *Meter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	befores := make([]int, len(in.TransactItems))
	for i, w := range in.TransactItems {
		switch {
		case w.Update != nil:
			befores[i] = m.current(ctx, w.Update.TableName, w.Update.Key)
		case w.Delete != nil:
			befores[i] = m.current(ctx, w.Delete.TableName, w.Delete.Key)
		}
	}
	out, err := m.API.TransactWriteItems(ctx, in, o...)
	units := 0.0
	for i, w := range in.TransactItems {
		switch {
		case w.Put != nil:
			units += writeUnits(idem.ItemSize(w.Put.Item))
		case w.Update != nil:
			units += writeUnits(max(befores[i], m.current(ctx, w.Update.TableName, w.Update.Key)))
		case w.Delete != nil:
			units += writeUnits(befores[i])
		default:
			units += 1
		}
	}
	var cc []types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	m.add(2*units, 0, cc...)
	return out, err
}
