package idemtest

import (
	"context"
	"crypto/rand"
	"fmt"
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
	name, err := idempotencyTable(context.Background(), db)
	if name != "" {
		t.Cleanup(func() { deleteTable(db, name) })
	}
	if err != nil {
		t.Fatal(err)
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
	name, err := createTable(context.Background(), db, in)
	if name != "" {
		t.Cleanup(func() { deleteTable(db, name) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// Open returns an *idem.Store on a fresh idempotency table of the engine
// (see Endpoint), and a client of the engine to make the work's own tables
// with: for an Example or a program, which have no test to clean up after.
// A test uses NewStore instead. The table lives as long as the engine.
func Open(ctx context.Context, optFns ...func(*idem.Options)) (*idem.Store, *dynamodb.Client, error) {
	ep, err := Endpoint()
	if err != nil {
		return nil, nil, err
	}
	db := newClient(ep)
	table, err := idempotencyTable(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	store, err := idem.New(db, table, optFns...)
	return store, db, err
}

// idempotencyTable creates a fresh table shaped as idem.New needs it.
func idempotencyTable(ctx context.Context, db *dynamodb.Client) (string, error) {
	name, err := createTable(ctx, db, &dynamodb.CreateTableInput{
		TableName:            aws.String("idempotency"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(idem.AttrPK), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(idem.AttrPK), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		return name, err
	}
	if _, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(idem.AttrExpiresAt),
			Enabled:       aws.Bool(true),
		},
	}); err != nil {
		return name, fmt.Errorf("idemtest: enable TTL on %s: %w", name, err)
	}
	return name, nil
}

// createTable creates in under a fresh name and waits until it is active.
// It returns the name once the table was asked for, so that a caller can
// delete it even when the wait failed.
func createTable(ctx context.Context, db *dynamodb.Client, in *dynamodb.CreateTableInput) (string, error) {
	def := *in
	name := aws.ToString(in.TableName) + "-" + strings.ToLower(rand.Text()[:10])
	def.TableName = aws.String(name)
	if def.BillingMode == "" && def.ProvisionedThroughput == nil {
		def.BillingMode = types.BillingModePayPerRequest
	}
	if _, err := db.CreateTable(ctx, &def); err != nil {
		return "", fmt.Errorf("idemtest: create table %s: %w", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 20 * time.Millisecond
		o.MaxDelay = time.Second
	}).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		return name, fmt.Errorf("idemtest: wait for table %s: %w", name, err)
	}
	return name, nil
}

func deleteTable(db *dynamodb.Client, name string) {
	_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) // best effort: a table left behind costs a test engine only space
}
