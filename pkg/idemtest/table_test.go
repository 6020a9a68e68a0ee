package idemtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// The table is the one idem.New documents: hash key pk (a string), TTL on
// expires_at, on-demand; it is gone once its test ends.
func TestTableIsShapedAsTheLibraryNeedsAndGoesWithItsTest(t *testing.T) {
	db := idemtest.Client(t)
	ctx := context.Background()
	var name string
	t.Run("table", func(t *testing.T) {
		name = idemtest.Table(t, db)
		d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		tb := d.Table
		if len(tb.KeySchema) != 1 || aws.ToString(tb.KeySchema[0].AttributeName) != idem.AttrPK || tb.KeySchema[0].KeyType != types.KeyTypeHash {
			t.Errorf("key schema = %+v, want %s HASH alone", tb.KeySchema, idem.AttrPK)
		}
		if len(tb.AttributeDefinitions) != 1 || tb.AttributeDefinitions[0].AttributeType != types.ScalarAttributeTypeS {
			t.Errorf("attributes = %+v, want %s a string", tb.AttributeDefinitions, idem.AttrPK)
		}
		if tb.BillingModeSummary == nil || tb.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
			t.Errorf("billing = %+v, want on-demand", tb.BillingModeSummary)
		}
		ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		if d := ttl.TimeToLiveDescription; d.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != idem.AttrExpiresAt {
			t.Errorf("TTL = %s on %q, want ENABLED on %s", d.TimeToLiveStatus, aws.ToString(d.AttributeName), idem.AttrExpiresAt)
		}
	})
	_, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var gone *types.ResourceNotFoundException
	if !errors.As(err, &gone) {
		t.Fatalf("after its test, DescribeTable(%s) = %v; want ResourceNotFoundException", name, err)
	}
}
