package testbed

import (
	"context"
	"maps"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkeys/idem/pkg/idem"
)

// Memory is an in-memory stand-in for DynamoDB that answers the library's
// own calls as DynamoDB would for them (a claim on a completed record fails
// and returns it; a commit completes the record), and nothing more. It
// isolates the library's CPU and allocations from the network: it is for
// benchmarks and fuzzers only; every behaviour is tested against the local engine.
type Memory struct {
	mu    sync.Mutex
	items map[string]map[string]types.AttributeValue
}

func pkOf(item map[string]types.AttributeValue) string {
	return item[idem.AttrPK].(*types.AttributeValueMemberS).Value
}

func (m *Memory) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.fails(in.Item, aws.ToString(in.ConditionExpression), in.ExpressionAttributeValues); !ok {
		return nil, &types.ConditionalCheckFailedException{Item: old}
	}
	m.items[pkOf(in.Item)] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

// fails checks the two kinds of condition the library writes under: the
// lease's fence, or a claim (which, here, only an absent record passes).
func (m *Memory) fails(item map[string]types.AttributeValue, cond string, values map[string]types.AttributeValue) (map[string]types.AttributeValue, bool) {
	old, exists := m.items[pkOf(item)]
	if !strings.Contains(cond, "lease_token = :mine") {
		return old, !exists
	}
	s, _ := old["status"].(*types.AttributeValueMemberS)
	tok, _ := old["lease_token"].(*types.AttributeValueMemberS)
	mine := values[":mine"].(*types.AttributeValueMemberS)
	return old, exists && s.Value == "IN_PROGRESS" && tok.Value == mine.Value
}

func (m *Memory) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &dynamodb.GetItemOutput{Item: m.items[pkOf(in.Key)]}, nil
}

// UpdateItem is the lapse: lease_until set to 0 under the lease's fence.
func (m *Memory) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.fails(in.Key, aws.ToString(in.ConditionExpression), in.ExpressionAttributeValues)
	if !ok {
		return nil, &types.ConditionalCheckFailedException{Item: old}
	}
	lapsed := maps.Clone(old)
	lapsed["lease_until"] = in.ExpressionAttributeValues[":zero"]
	m.items[pkOf(in.Key)] = lapsed
	return &dynamodb.UpdateItemOutput{}, nil
}

// TransactWriteItems commits the record (always the first item) and drops
// the business writes, which nothing here reads back.
func (m *Memory) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	record := in.TransactItems[0].Put
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.fails(record.Item, aws.ToString(record.ConditionExpression), record.ExpressionAttributeValues); !ok {
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		reasons[0] = types.CancellationReason{Code: aws.String("ConditionalCheckFailed"), Item: old}
		for i := 1; i < len(reasons); i++ {
			reasons[i].Code = aws.String("None")
		}
		return nil, &types.TransactionCanceledException{CancellationReasons: reasons}
	}
	m.items[pkOf(record.Item)] = record.Item
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// NewMemory is an empty Memory.
func NewMemory() *Memory { return &Memory{items: map[string]map[string]types.AttributeValue{}} }
