package idemtest

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

// Table creates a fresh idempotency table, shaped as idem.New needs it: hash
// key idem.AttrPK (a string), TTL on idem.AttrExpiresAt, on-demand capacity.
// It returns the table's name and deletes the table when the test ends.
func Table(t testing.TB, db *dynamodb.Client) string {
	t.Helper()
	name := CreateTable(t, db, &dynamodb.CreateTableInput{
		TableName:            aws.String("idempotency"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(idem.AttrPK), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(idem.AttrPK), KeyType: types.KeyTypeHash}},
	})
	if _, err := db.UpdateTimeToLive(context.Background(), &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(idem.AttrExpiresAt),
			Enabled:       aws.Bool(true),
		},
	}); err != nil {
		t.Fatalf("idemtest: enable TTL on %s: %v", name, err)
	}
	return name
}

// CreateTable creates a table for the test, as in describes it (a table of
// the business writes, say), under a fresh name that starts with
// in.TableName, on-demand unless in sets a billing mode or provisioned
// throughput. It waits until the table is active, returns its name and
// deletes it when the test ends.
func CreateTable(t testing.TB, db *dynamodb.Client, in *dynamodb.CreateTableInput) string {
	t.Helper()
	def := *in
	name := aws.ToString(in.TableName) + "-" + strings.ToLower(rand.Text()[:10])
	def.TableName = aws.String(name)
	if def.BillingMode == "" && def.ProvisionedThroughput == nil {
		def.BillingMode = types.BillingModePayPerRequest
	}
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, &def); err != nil {
		t.Fatalf("idemtest: create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	if err := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 20 * time.Millisecond
		o.MaxDelay = time.Second
	}).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		t.Fatalf("idemtest: wait for table %s: %v", name, err)
	}
	return name
}
