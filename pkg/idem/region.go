package idem

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableDescriber is the one call CheckSingleRegion makes; *dynamodb.Client
// has it. It is apart from DynamoDBAPI, which a Store's requests use.
type TableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// replicaProblem says why a table's replicas would break the guarantee, or
// "" for a table in one Region.
//
// In multi-Region eventual consistency (MREC, the default), each Region
// evaluates a conditional write against its own replica and conflicting
// writes from two Regions are settled by last writer wins: two Regions can
// both win the claim of one key and both run the work. In multi-Region
// strong consistency (MRSC), DynamoDB does not support transactions, so
// every commit (TransactWriteItems) fails, nor TTL, which expires records.
// A legacy (2017.11.29) global table is MREC.
func replicaProblem(t *types.TableDescription) string {
	if t == nil || (len(t.Replicas) == 0 && aws.ToString(t.GlobalTableVersion) == "") {
		return ""
	}
	regions := make([]string, 0, len(t.Replicas))
	for _, r := range t.Replicas {
		regions = append(regions, aws.ToString(r.RegionName))
	}
	if t.MultiRegionConsistency == types.MultiRegionConsistencyStrong {
		return fmt.Sprintf("global table in strong consistency (MRSC) with replicas %v: it supports neither transactions, which every commit is, nor TTL", regions)
	}
	return fmt.Sprintf("global table in eventual consistency (MREC) with replicas %v: each Region checks a claim against its own replica and the last writer wins, so two Regions may both run one key's work", regions)
}

// CheckSingleRegion describes the table once and fails with
// ErrMisconfigured if it has replicas in other Regions. The functions call
// it at cold start; New makes no call of its own. Route each key to one
// home Region's own table instead (see DESIGN.md, "Across Regions").
func CheckSingleRegion(ctx context.Context, d TableDescriber, table string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := d.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("idem: describe table %s: %w", table, err)
	}
	if p := replicaProblem(out.Table); p != "" {
		return fmt.Errorf("%w: %s is replicated to other Regions: %s", ErrMisconfigured, table, p)
	}
	return nil
}
