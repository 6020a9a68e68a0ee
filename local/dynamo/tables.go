package dynamo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/awslabs/goformation/v7"
)

// Table is a table definition read from template.yaml, so that local tables
// are the deployed ones: same keys, same TTL attribute.
type Table struct {
	LogicalID    string
	Attributes   []types.AttributeDefinition
	KeySchema    []types.KeySchemaElement
	TTLAttribute string // empty when the table does not expire items
}

// FindTemplate returns the path of the project's template.yaml, looking in
// dir and each of its parents, so that tests find it from any package.
func FindTemplate(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "template.yaml")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("template.yaml not found in this directory or any parent")
		}
		dir = parent
	}
}

// TemplateTables reads the AWS::DynamoDB::Table resources of a template,
// ordered by logical id.
func TemplateTables(templatePath string) ([]Table, error) {
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		return nil, err
	}
	if raw, err = ForGoformation(raw); err != nil {
		return nil, err
	}
	tpl, err := goformation.ParseYAML(raw)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", templatePath, err)
	}
	var tables []Table
	for id, r := range tpl.GetAllDynamoDBTableResources() {
		t := Table{LogicalID: id}
		for _, a := range r.AttributeDefinitions {
			t.Attributes = append(t.Attributes, types.AttributeDefinition{
				AttributeName: aws.String(a.AttributeName),
				AttributeType: types.ScalarAttributeType(a.AttributeType),
			})
		}
		for _, k := range r.KeySchema {
			t.KeySchema = append(t.KeySchema, types.KeySchemaElement{
				AttributeName: aws.String(k.AttributeName),
				KeyType:       types.KeyType(k.KeyType),
			})
		}
		if ttl := r.TimeToLiveSpecification; ttl != nil && ttl.Enabled {
			t.TTLAttribute = aws.ToString(ttl.AttributeName)
		}
		if len(r.GlobalSecondaryIndexes) > 0 || len(r.LocalSecondaryIndexes) > 0 {
			return nil, fmt.Errorf("table %s: secondary indexes are not mirrored locally yet", id)
		}
		tables = append(tables, t)
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i].LogicalID < tables[j].LogicalID })
	return tables, nil
}

// Lookup returns the table with the given logical id.
func Lookup(tables []Table, logicalID string) (Table, error) {
	for _, t := range tables {
		if t.LogicalID == logicalID {
			return t, nil
		}
	}
	return Table{}, fmt.Errorf("template has no table %s", logicalID)
}

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

// ProjectTable returns the definition of logicalID in the template.yaml
// around the working directory.
func ProjectTable(logicalID string) (Table, error) {
	path, err := FindTemplate(".")
	if err != nil {
		return Table{}, err
	}
	tables, err := TemplateTables(path)
	if err != nil {
		return Table{}, err
	}
	return Lookup(tables, logicalID)
}
