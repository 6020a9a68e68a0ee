package idemlambda

import "context"

// streamRecord is what the stream doors read of a record besides the
// event: the key whose order the stream keeps (Kinesis's partition key, a
// DynamoDB item's key), and its id for a log line.
type streamRecord struct {
	orderKey, id string
}

// streamBatch processes a shard's batch in its order, each record once
// per id, and returns the index of the first record that is not done (-1
// when every one is): the door names its sequence number, where Lambda
// resumes. Once a record fails, the records after it with its order key
// fail unprocessed: a later change to one key must not take effect before
// an earlier one that has not. Records of other keys go on; on the
// redelivery they are skipped as processed.
func (c *consumer[E]) streamBatch(ctx context.Context, s Doer, h EventHandler[E], records []E, read func(*E) streamRecord) int {
	first := -1
	held := map[string]bool{} // the order keys with a record not done
	for i := range records {
		r := read(&records[i])
		if held[r.orderKey] {
			continue
		}
		if err := c.process(ctx, s, &records[i], h); err != nil {
			c.logFailure("record", r.id, err)
			held[r.orderKey] = true
			if first < 0 {
				first = i
			}
		}
	}
	return first
}
