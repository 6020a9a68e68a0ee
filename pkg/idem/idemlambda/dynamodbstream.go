package idemlambda

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"
)

// DynamoDBStream wraps h for a Lambda that reads a DynamoDB table's stream
// through an event-source mapping with ReportBatchItemFailures: each
// change is processed once per id, its writes committed with its processed
// marker in one transaction, in the batch's order (a shard's sequence
// order); a change processed before is skipped. The id is the record's
// eventID, which its redeliveries keep, unless ConsumerOptions.Key says
// otherwise; the fingerprint is its eventName and its change (keys,
// images, sequence number). It panics without ConsumerOptions.Scope.
//
// A change that fails (an error, a panic, its id held by another delivery
// or processed with another change) fails the changes after it to the
// same item (the same Keys) unprocessed,
// so an item's changes take effect in stream order; changes to other items
// go on. The answer names the first failed change only: Lambda checkpoints
// there and sends it and every change after it again, and those processed
// already are skipped.
//
// The mapping (SAM: an Events entry of Type DynamoDB) needs
// FunctionResponseTypes: [ReportBatchItemFailures]; without it Lambda
// takes the answer for success and moves past a failed change. Set
// BisectBatchOnFunctionError (an invocation that dies or times out is
// split until its change is found), MaximumRetryAttempts, and a
// DestinationConfig OnFailure queue or topic: once a change's retries are
// spent, Lambda skips the batch it was retrying (the changes to its item
// held back among them), sends the batch's description there, and
// moves on; the later changes to its item then take effect without them. The stream keeps a
// change 24 hours; one still failing then is lost unseen without that
// destination.
func DynamoDBStream(s Doer, h EventHandler[events.DynamoDBEventRecord], optFns ...func(*ConsumerOptions[events.DynamoDBEventRecord])) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	c := newConsumer("DynamoDBStream", optFns)
	c.kind = "DYNAMODB"
	if c.Key == nil {
		c.Key = func(r *events.DynamoDBEventRecord) (string, error) { return r.EventID, nil }
	}
	c.raw = func(r *events.DynamoDBEventRecord) (string, []byte) { return r.EventName, marshal(r.Change) }
	read := func(r *events.DynamoDBEventRecord) streamRecord {
		return streamRecord{orderKey: string(marshal(r.Change.Keys)), id: r.EventID}
	}
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		var resp events.DynamoDBEventResponse
		if i := c.streamBatch(ctx, s, h, ev.Records, read); i >= 0 {
			resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[i].Change.SequenceNumber}}
		}
		return resp, nil
	}
}

// marshal is v as JSON, its maps' keys sorted: the same change and the same
// item key give the same bytes. A stream record's values come from JSON
// and go back to it; one that could not (never from Lambda) gives none.
func marshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
