package idem

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Commit commits tx's writes alone, in one TransactWriteItems with no
// idempotency record (no call for a tx with none), after the same limit
// checks as Do's commit: the keyless path of a handler that also runs
// under Do (idemlambda.Function's PassThrough). A write whose condition
// fails with a ConflictFunc answers with that function's response, nothing
// written (a 5xx response is an error, as on Do's path); without one, the
// error is ErrWriteConditionFailed. A transaction whose answer was lost is
// sent again by the SDK with the same ClientRequestToken, which DynamoDB
// answers as the first for ten minutes.
func (s *Store) Commit(ctx context.Context, tx *Tx) (*Response, error) {
	if len(tx.writes) == 0 {
		return nil, nil
	}
	if err := checkTransaction(s.table, nil, tx.writes); err != nil {
		return nil, err
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: transactItems(nil, tx.writes), ClientRequestToken: aws.String(rand.Text())}
	err := retryConflicts(ctx, func(int) error {
		_, err := s.db.TransactWriteItems(ctx, in)
		return err
	})
	cancelled := canceled(err)
	switch {
	case err == nil:
		return nil, nil
	case cancelled != nil:
		i := failedWrite(cancelled.CancellationReasons, 0, len(tx.writes))
		if i < 0 {
			break
		}
		if tx.writes[i].OnConflict == nil {
			return nil, fmt.Errorf("%w: write %d", ErrWriteConditionFailed, i)
		}
		resp, err := tx.writes[i].OnConflict(cancelled.CancellationReasons[i].Item)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 500 {
			return nil, &unstored{resp: resp} // as on Do's path: a 5xx is no answer
		}
		return &resp, nil
	case refused(err):
		return nil, fmt.Errorf("%w: DynamoDB refused the writes: %w", ErrInvalidWrite, err)
	}
	return nil, fmt.Errorf("idem: commit of the writes alone: %w", err)
}
