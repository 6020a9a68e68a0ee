package idemtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// StreamEvent reads the stream of table (a table of the engine created
// with a StreamSpecification) from its start, and returns its first n
// records as the events.DynamoDBEvent that Lambda would deliver for them,
// in stream order, for a DynamoDB Streams consumer's tests. It waits up to
// ten seconds for the stream to hold n records, and fails the test if it
// holds fewer then, or has no stream.
func StreamEvent(t testing.TB, db *dynamodb.Client, table string, n int) events.DynamoDBEvent {
	t.Helper()
	ctx := context.Background()
	ep, err := Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("idemtest: the stream of %s: %v", table, err)
	}
	arn := aws.ToString(desc.Table.LatestStreamArn)
	if arn == "" {
		t.Fatalf("idemtest: table %s has no stream: create it with a StreamSpecification", table)
	}
	streams := newStreamsClient(ep)
	var recs []events.DynamoDBEventRecord
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if recs, err = readStream(ctx, streams, arn); err != nil {
			t.Fatalf("idemtest: the stream of %s: %v", table, err)
		}
		if len(recs) >= n {
			return events.DynamoDBEvent{Records: recs[:n]}
		}
		if time.Now().After(deadline) {
			t.Fatalf("idemtest: the stream of %s holds %d records after 10s, want %d", table, len(recs), n)
		}
	}
}

func newStreamsClient(ep string) *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region:       region,
		BaseEndpoint: aws.String(ep),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey, Source: "idemtest"}, nil
		}),
	})
}

// readStream reads every shard of the stream at arn, parents first as
// DescribeStream lists them, each from its start until a page comes back
// empty (the engine's open shard has nothing more then).
func readStream(ctx context.Context, streams *dynamodbstreams.Client, arn string) ([]events.DynamoDBEventRecord, error) {
	var recs []events.DynamoDBEventRecord
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)}
	for {
		desc, err := streams.DescribeStream(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, sh := range desc.StreamDescription.Shards {
			it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn),
				ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
			if err != nil {
				return nil, fmt.Errorf("shard %s: %w", aws.ToString(sh.ShardId), err)
			}
			for next := it.ShardIterator; next != nil; {
				out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: next})
				if err != nil {
					return nil, fmt.Errorf("shard %s: %w", aws.ToString(sh.ShardId), err)
				}
				for _, r := range out.Records {
					recs = append(recs, eventRecord(arn, r))
				}
				if len(out.Records) == 0 {
					break
				}
				next = out.NextShardIterator
			}
		}
		if in.ExclusiveStartShardId = desc.StreamDescription.LastEvaluatedShardId; in.ExclusiveStartShardId == nil {
			return recs, nil
		}
	}
}

// eventRecord is r as Lambda delivers it from the stream at arn.
func eventRecord(arn string, r streamtypes.Record) events.DynamoDBEventRecord {
	d := r.Dynamodb
	rec := events.DynamoDBEventRecord{
		AWSRegion: aws.ToString(r.AwsRegion), EventID: aws.ToString(r.EventID), EventName: string(r.EventName),
		EventSource: aws.ToString(r.EventSource), EventVersion: aws.ToString(r.EventVersion), EventSourceArn: arn,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: aws.ToTime(d.ApproximateCreationDateTime)},
			Keys:                        image(d.Keys), NewImage: image(d.NewImage), OldImage: image(d.OldImage),
			SequenceNumber: aws.ToString(d.SequenceNumber), SizeBytes: aws.ToInt64(d.SizeBytes), StreamViewType: string(d.StreamViewType),
		},
	}
	if u := r.UserIdentity; u != nil {
		rec.UserIdentity = &events.DynamoDBUserIdentity{Type: aws.ToString(u.Type), PrincipalID: aws.ToString(u.PrincipalId)}
	}
	return rec
}

// image is a stream image in Lambda's form; nil for none, as Lambda's JSON
// leaves it out.
func image(m map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		out[k] = value(v)
	}
	return out
}

func value(v streamtypes.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberM:
		return events.NewMapAttribute(image(v.Value))
	case *streamtypes.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, 0, len(v.Value))
		for _, e := range v.Value {
			l = append(l, value(e))
		}
		return events.NewListAttribute(l)
	}
	return events.NewNullAttribute()
}
