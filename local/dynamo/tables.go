package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/template"
)

// Table is a table of template.yaml, as the engine creates it: local
// tables are the deployed ones, same keys, same TTL attribute.
type Table template.Table

// Create creates the table under name, waits until it is active, and turns
// on its TTL. An existing table of that name is left as it is.
func (t Table) Create(ctx context.Context, db *dynamodb.Client, name string) error {
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: t.Attributes,
		KeySchema:            t.KeySchema,
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 50 * time.Millisecond
		o.MaxDelay = time.Second
	}).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	if t.TTLAttribute == "" {
		return nil
	}
	if _, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(t.TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	}); err != nil {
		return fmt.Errorf("enable TTL on %s: %w", name, err)
	}
	return nil
}

// CreateTables creates each of the template's tables under prefix and its
// logical id, as Create does, and calls created after each.
func CreateTables(ctx context.Context, db *dynamodb.Client, tables []template.Table, prefix string, created func(t template.Table, name string)) error {
	for _, t := range tables {
		name := prefix + t.LogicalID
		if err := Table(t).Create(ctx, db, name); err != nil {
			return err
		}
		created(t, name)
	}
	return nil
}

// ProjectTable returns the definition of logicalID in the template.yaml
// around the working directory.
func ProjectTable(logicalID string) (Table, error) {
	tpl, err := template.Project()
	if err != nil {
		return Table{}, err
	}
	t, err := tpl.Table(logicalID)
	return Table(t), err
}
