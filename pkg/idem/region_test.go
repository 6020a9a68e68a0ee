package idem_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/idem"
)

// described answers DescribeTable with a table as AWS describes a global one.
type described types.TableDescription

func (d *described) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	t := types.TableDescription(*d)
	return &dynamodb.DescribeTableOutput{Table: &t}, nil
}

func TestCheckSingleRegionRefusesGlobalTables(t *testing.T) {
	replicas := []types.ReplicaDescription{{RegionName: aws.String("us-east-1")}, {RegionName: aws.String("eu-west-1")}}
	for name, tc := range map[string]types.TableDescription{
		"MREC":   {Replicas: replicas, MultiRegionConsistency: types.MultiRegionConsistencyEventual},
		"MRSC":   {Replicas: replicas, MultiRegionConsistency: types.MultiRegionConsistencyStrong},
		"legacy": {GlobalTableVersion: aws.String("2017.11.29")},
	} {
		d := described(tc)
		if err := idem.CheckSingleRegion(context.Background(), &d, "idem"); !errors.Is(err, idem.ErrMisconfigured) {
			t.Errorf("%s: %v, want ErrMisconfigured", name, err)
		}
	}
}

func TestCheckSingleRegionAcceptsTheLocalTable(t *testing.T) {
	db := dynamotest.Client(t)
	table := dynamotest.Table(t, db, "IdempotencyTable")
	if err := idem.CheckSingleRegion(context.Background(), db, table); err != nil {
		t.Fatal(err)
	}
	if err := idem.CheckSingleRegion(context.Background(), db, "no-such-table"); err == nil {
		t.Fatal("a missing table passed the check")
	}
}
