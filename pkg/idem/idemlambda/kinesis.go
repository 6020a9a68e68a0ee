package idemlambda

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// Kinesis wraps h for a Lambda that reads a Kinesis data stream through an
// event-source mapping with ReportBatchItemFailures: each record is
// processed once per id, its writes committed with its processed marker in
// one transaction, in the batch's order (a shard's sequence order); a
// record processed before is skipped. It panics without
// ConsumerOptions.Scope.
//
// The id is the record's eventID (its shard and sequence number) unless
// ConsumerOptions.Key says otherwise, and it should: Lambda redelivers a
// record with its sequence number, but a producer whose PutRecord lost its
// answer and was sent again lands its record twice, under two sequence
// numbers. Put the producer's business id in the record (its data, or the
// partition key when that is unique per event) and read it in Key: only
// that id stays the same. The fingerprint is the record's data.
//
// A record that fails (an error, a panic, its id held by another delivery
// or processed with other data) fails the records after it with its
// partition key unprocessed, so a key's records take effect in stream
// order; records of other keys go on. The answer names the first failed
// record only: Lambda checkpoints there and sends it and every record
// after it again, and those processed already are skipped.
//
// The mapping (SAM: an Events entry of Type Kinesis) needs
// FunctionResponseTypes: [ReportBatchItemFailures]; without it Lambda
// takes the answer for success and moves past a failed record. Set
// BisectBatchOnFunctionError (an invocation that dies or times out is
// split until its record is found), MaximumRetryAttempts, and a
// DestinationConfig OnFailure queue or topic: once a record's retries are
// spent, Lambda skips the batch it was retrying (the records of its key
// held back among them), sends the batch's description there, and
// moves on; the later records of its key then take effect without them.
func Kinesis(s Doer, h EventHandler[events.KinesisEventRecord], optFns ...func(*ConsumerOptions[events.KinesisEventRecord])) func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
	c := newConsumer("Kinesis", optFns)
	c.kind = "KINESIS"
	if c.Key == nil {
		c.Key = func(r *events.KinesisEventRecord) (string, error) { return r.EventID, nil }
	}
	c.raw = func(r *events.KinesisEventRecord) (string, []byte) { return c.Scope, r.Kinesis.Data }
	read := func(r *events.KinesisEventRecord) streamRecord {
		return streamRecord{orderKey: r.Kinesis.PartitionKey, id: r.EventID}
	}
	return func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		var resp events.KinesisEventResponse
		if i := c.streamBatch(ctx, s, h, ev.Records, read); i >= 0 {
			resp.BatchItemFailures = []events.KinesisBatchItemFailure{{ItemIdentifier: ev.Records[i].Kinesis.SequenceNumber}}
		}
		return resp, nil
	}
}
