package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// described answers DescribeTable with a table as AWS describes a global one.
type described types.TableDescription

func (d *described) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	t := types.TableDescription(*d)
	return &dynamodb.DescribeTableOutput{Table: &t}, nil
}

func TestCheckSingleRegionRefusesGlobalTables(t *testing.T) {
	replicas := []types.ReplicaDescription{{RegionName: aws.String("us-east-1")}, {RegionName: aws.String("eu-west-1")}}
	// Each is refused for its own reason: an MRSC table cannot commit at
	// all, an MREC one (a legacy one is) lets two Regions both claim.
	for name, tc := range map[string]struct {
		table types.TableDescription
		cause string
	}{
		"MREC":   {types.TableDescription{Replicas: replicas, MultiRegionConsistency: types.MultiRegionConsistencyEventual}, "eventual consistency (MREC) with replicas [us-east-1 eu-west-1]"},
		"MRSC":   {types.TableDescription{Replicas: replicas, MultiRegionConsistency: types.MultiRegionConsistencyStrong}, "strong consistency (MRSC) with replicas [us-east-1 eu-west-1]: it supports neither transactions"},
		"legacy": {types.TableDescription{GlobalTableVersion: aws.String("2017.11.29")}, "eventual consistency (MREC)"},
	} {
		d := described(tc.table)
		if err := idem.CheckSingleRegion(context.Background(), &d, "idem"); !errors.Is(err, idem.ErrMisconfigured) || !strings.Contains(err.Error(), tc.cause) {
			t.Errorf("%s: %v, want ErrMisconfigured for a global table in %s", name, err, tc.cause)
		}
	}
}

func TestCheckSingleRegionAcceptsTheLocalTable(t *testing.T) {
	db := idemtest.Client(t)
	table := idemtest.Table(t, db)
	if err := idem.CheckSingleRegion(context.Background(), db, table); err != nil {
		t.Fatal(err)
	}
	if err := idem.CheckSingleRegion(context.Background(), db, "no-such-table"); err == nil {
		t.Fatal("a missing table passed the check")
	}
}
