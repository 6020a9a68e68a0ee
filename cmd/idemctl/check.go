package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkeys/idem/pkg/idem"
)

// tableAPI is what check describes; idem.DynamoDBAPI stays the record calls.
type tableAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	DescribeContinuousBackups(ctx context.Context, in *dynamodb.DescribeContinuousBackupsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeContinuousBackupsOutput, error)
}

// finding is one line of check: what was checked, and what is wrong ("": nothing).
type finding struct{ what, problem string }

// check describes the table and prints one line per requirement; it exits
// 1 if any fails.
func check(ctx context.Context, db tableAPI, table string, w io.Writer) int {
	name := aws.String(table)
	t, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: name})
	if err != nil {
		fmt.Fprintln(w, "FAIL describe table:", err)
		return 1
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: name})
	if err != nil {
		fmt.Fprintln(w, "FAIL describe TTL:", err)
		return 1
	}
	var pitr *types.ContinuousBackupsDescription
	backups, err := db.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: name})
	switch {
	case unsupported(err):
		pitr = nil // reported by findings as not supported
	case err != nil:
		fmt.Fprintln(w, "FAIL describe backups:", err)
		return 1
	default:
		pitr = backups.ContinuousBackupsDescription
	}
	code := 0
	for _, f := range findings(t.Table, ttl.TimeToLiveDescription, pitr) {
		if unsupported(err) && f.what == whatPITR {
			fmt.Fprintf(w, "n/a  %s: %s\n", f.what, notSupported)
			continue
		}
		if f.problem == "" {
			fmt.Fprintln(w, "ok  ", f.what)
			continue
		}
		fmt.Fprintf(w, "FAIL %s: %s\n", f.what, f.problem)
		code = 1
	}
	return code
}

const (
	whatPITR = "point-in-time recovery"
	// notSupported is what check says when the engine does not implement
	// continuous backups (DynamoDB Local): neither a pass nor a failure, to
	// be checked again on DynamoDB.
	notSupported = "not supported by this engine (DescribeContinuousBackups: UnknownOperationException); check it on DynamoDB"
)

// unsupported tells an engine that lacks the operation from any other
// error: DynamoDB Local answers UnknownOperationException.
func unsupported(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException"
}

// replicaProblem is why idem.CheckSingleRegion refuses the table described
// by t, or "" when it does not.
func replicaProblem(t *types.TableDescription) string {
	err := idem.CheckSingleRegion(context.Background(), described{t}, aws.ToString(t.TableName))
	if err == nil {
		return ""
	}
	return err.Error()
}

// described answers DescribeTable with a description already read.
type described struct{ t *types.TableDescription }

func (d described) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{Table: d.t}, nil
}

func findings(t *types.TableDescription, ttl *types.TimeToLiveDescription, b *types.ContinuousBackupsDescription) []finding {
	var out []finding
	add := func(what, problem string) { out = append(out, finding{what, problem}) }

	key := fmt.Sprintf("key schema %v", keyNames(t))
	if len(t.KeySchema) != 1 || aws.ToString(t.KeySchema[0].AttributeName) != idem.AttrPK || attrType(t, idem.AttrPK) != types.ScalarAttributeTypeS {
		add(key, "want only the hash key "+idem.AttrPK+" (string)")
	} else {
		add("hash key "+idem.AttrPK+" (string)", "")
	}
	if ttl == nil || ttl.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(ttl.AttributeName) != idem.AttrExpiresAt {
		add("TTL on "+idem.AttrExpiresAt, "not enabled: expired records are never deleted (the protocol still ignores them)")
	} else {
		add("TTL on "+idem.AttrExpiresAt, "")
	}
	if t.BillingModeSummary == nil || t.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		add("on-demand billing", "provisioned: a burst of retries is throttled, and a throttled commit is a 5xx")
	} else {
		add("on-demand billing", "")
	}
	if b == nil || b.PointInTimeRecoveryDescription == nil || b.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusEnabled {
		add(whatPITR, "off: a lost table forgets every key, and every retry runs its work again")
	} else {
		add(whatPITR, "")
	}
	add("single Region (not a global table)", replicaProblem(t))
	return out
}

func keyNames(t *types.TableDescription) []string {
	var names []string
	for _, k := range t.KeySchema {
		names = append(names, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	return names
}

func attrType(t *types.TableDescription, name string) types.ScalarAttributeType {
	for _, a := range t.AttributeDefinitions {
		if aws.ToString(a.AttributeName) == name {
			return a.AttributeType
		}
	}
	return ""
}
