package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/idemkeys/idem/local/dynamo"
)

// The fence is checked on the idempotency table's own history, not on what
// the world holds at the end. A holder whose lease was taken over and that
// commits anyway leaves no trace there when both executions did the same
// thing: one order, one record, every answer the record's. The table's
// stream (new and old images, in the engine's order of writes) shows every
// commit beside the record it replaced, so a commit by a lease the record
// no longer named is seen however alike the two executions were.

// commit is one write that left an idempotency record completed, with the
// record it replaced (none for a record made completed at once, as
// DoAtomic's first commit makes it). The campaign's functions commit
// through Do; DoAtomic's takeover of a lapsed record (completed over a
// record in progress under another token) would be reported, and needs a
// rule of its own before a function of the stack uses it.
type commit struct {
	at                   time.Time // the stream record's approximate time
	oldStatus, oldToken  string
	oldExpires           int64 // epoch seconds
	newToken             string
	hadOld, wasCompleted bool
}

// fenced says whether the commit was its lease holder's: there was no
// record, or the record it replaced was in progress under the same lease
// token, or completed under it (the campaign's own expiry of a record
// keeps its token), or its TTL had passed (absent to every call). Anything
// else is a commit the fence should have refused.
func (c commit) fenced() bool {
	switch {
	case !c.hadOld:
		return true
	case c.oldToken == c.newToken:
		return c.oldStatus == statusInProgress || c.wasCompleted
	default:
		// DynamoDB Local gives a stream record's time to the minute,
		// rounded down: the record expired if it did within that minute
		// (a TTL is a day at least, so the slack admits nothing else).
		return c.oldExpires < c.at.Unix()+60
	}
}

func (c commit) String() string {
	if !c.hadOld {
		return fmt.Sprintf("at %s: completed, lease %s, from no record", c.at.Format(time.TimeOnly), c.newToken)
	}
	return fmt.Sprintf("at %s: completed by lease %s over a record %s under lease %s (expires %d)",
		c.at.Format(time.TimeOnly), c.newToken, c.oldStatus, c.oldToken, c.oldExpires)
}

const (
	statusInProgress = "IN_PROGRESS"
	statusCompleted  = "COMPLETED"
)

// streamRecords turns on the idempotency table's stream, with the old and
// the new image of every write, before the first operation. It returns
// the stream's ARN.
func (c *Campaign) streamRecords(ctx context.Context) (string, error) {
	out, err := c.db.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(c.stack.Tables["IdempotencyTable"]),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}})
	if err != nil {
		return "", fmt.Errorf("the idempotency table's stream: %w", err)
	}
	return aws.ToString(out.TableDescription.LatestStreamArn), nil
}

// readCommits reads the stream whole and returns every commit by record
// (its pk).
func (c *Campaign) readCommits(ctx context.Context) (map[string][]commit, error) {
	streams := dynamo.NewStreamsClient(c.stack.Endpoint)
	commits := map[string][]commit{}
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(c.stream)}
	for {
		desc, err := streams.DescribeStream(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describe the idempotency table's stream: %w", err)
		}
		for _, sh := range desc.StreamDescription.Shards {
			if err := readShard(ctx, streams, c.stream, sh.ShardId, commits); err != nil {
				return nil, err
			}
		}
		if in.ExclusiveStartShardId = desc.StreamDescription.LastEvaluatedShardId; in.ExclusiveStartShardId == nil {
			return commits, nil
		}
	}
}

// readShard reads one shard from its start until it has no more records.
func readShard(ctx context.Context, streams *dynamodbstreams.Client, arn string, shard *string, commits map[string][]commit) error {
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn),
		ShardId: shard, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		return fmt.Errorf("the stream's shard %s: %w", aws.ToString(shard), err)
	}
	for next := it.ShardIterator; next != nil; {
		out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: next})
		if err != nil {
			return fmt.Errorf("the stream's records: %w", err)
		}
		for _, r := range out.Records {
			if pk, cm, ok := commitOf(r); ok {
				commits[pk] = append(commits[pk], cm)
			}
		}
		if len(out.Records) == 0 {
			// DynamoDB Local's open shard has no more records. DynamoDB may
			// answer an empty page before more; checkStream then finds a
			// completed record whose commit was not read, and says so.
			return nil
		}
		next = out.NextShardIterator
	}
	return nil
}

// commitOf reads a stream record as a commit, if it is one: a write whose
// new image is a completed record.
func commitOf(r streamtypes.Record) (string, commit, bool) {
	d := r.Dynamodb
	if d == nil || str(d.NewImage, "status") != statusCompleted {
		return "", commit{}, false
	}
	cm := commit{at: aws.ToTime(d.ApproximateCreationDateTime), newToken: str(d.NewImage, "lease_token"), hadOld: len(d.OldImage) > 0}
	if cm.hadOld {
		cm.oldStatus, cm.oldToken = str(d.OldImage, "status"), str(d.OldImage, "lease_token")
		cm.wasCompleted = cm.oldStatus == statusCompleted
		cm.oldExpires, _ = strconv.ParseInt(num(d.OldImage, "expires_at"), 10, 64)
	}
	return str(d.NewImage, "pk"), cm, true
}

func str(img map[string]streamtypes.AttributeValue, name string) string {
	v, _ := img[name].(*streamtypes.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

func num(img map[string]streamtypes.AttributeValue, name string) string {
	v, _ := img[name].(*streamtypes.AttributeValueMemberN)
	if v == nil {
		return ""
	}
	return v.Value
}

// checkFence holds every commit of op's record to its lease: each was made
// by the lease the record named when it landed.
func checkFence(op *operation, w *world) []violation {
	pk := opPK(op)
	var v []violation
	for _, cm := range w.commits[pk] {
		if !cm.fenced() {
			v = append(v, violation{unfenced, "a commit by a lease the record no longer named: " + cm.String()})
		}
	}
	return v
}

// checkStream holds the stream to the tables: each record that ends
// completed has its commit in the stream (a stream read short would
// otherwise pass its fence check having checked nothing); and it holds the
// commits of the records no operation owns (the stats consumer's, one per
// event) to the fence, counting what it finds in r.
func (c *Campaign) checkStream(w *world, r *Report) []string {
	var out []string
	for _, rec := range w.records {
		if rec.Status == statusCompleted && !slices.ContainsFunc(w.commits[rec.PK], func(cm commit) bool { return cm.newToken == rec.LeaseToken }) {
			r.Count[other]++
			out = append(out, fmt.Sprintf("VIOLATION (%s): record %s is completed under lease %s, and the idempotency table's stream has no write that completed it: the stream was read short\n", other, rec.PK, rec.LeaseToken))
		}
	}
	return append(out, c.checkOthersFence(w, r)...)
}

// checkOthersFence holds the commits of the records no operation owns to
// the fence.
func (c *Campaign) checkOthersFence(w *world, r *Report) []string {
	ours := map[string]bool{}
	for _, op := range c.ops {
		ours[opPK(op)] = true
	}
	var out []string
	for pk, list := range w.commits {
		for _, cm := range list {
			if !ours[pk] && !cm.fenced() {
				r.Count[unfenced]++
				out = append(out, fmt.Sprintf("VIOLATION (%s): record %s: a commit by a lease the record no longer named: %s\n", unfenced, pk, cm))
			}
		}
	}
	return out
}

// opPK is op's record's partition key, as recordKey writes it.
func opPK(op *operation) string {
	return recordKey(op)["pk"].(*types.AttributeValueMemberS).Value
}
