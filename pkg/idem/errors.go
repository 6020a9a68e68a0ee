package idem

import (
	"errors"
	"fmt"
	"time"
)

// Match errors with errors.Is: the errors returned wrap these with detail.
var (
	// ErrInProgress is returned when another request holds a live lease on
	// the key. The error is an *InProgressError, which says when to retry.
	ErrInProgress = errors.New("idem: request with this key is in progress")
	// ErrFingerprintMismatch is returned when the key was used for a
	// different request, whatever the record's state.
	ErrFingerprintMismatch = errors.New("idem: key reused with a different request")
	// ErrLeaseLost is returned when the lease was taken over while the
	// work ran: this holder was fenced, and none of its writes committed.
	ErrLeaseLost = errors.New("idem: lease lost to a takeover; nothing was committed")
	// ErrWriteConditionFailed is returned when a business write's
	// condition failed and the write has no ConflictFunc.
	ErrWriteConditionFailed = errors.New("idem: a business write's condition failed")
	// ErrInvalidWrite is returned when DynamoDB would refuse the business
	// writes as written: a write with no action, two actions on one item
	// (the record's included), or DynamoDB's own refusal of them.
	ErrInvalidWrite = errors.New("idem: invalid business write")

	// ErrInvalidKey is returned for a key that is empty, over MaxKeyLength
	// or not printable ASCII.
	ErrInvalidKey = errors.New("idem: invalid idempotency key")
	// ErrInvalidScope is returned for a scope that is empty, over
	// MaxScopeLength or not valid UTF-8 (DynamoDB would store each byte
	// that is not as U+FFFD, so two such scopes would share records).
	ErrInvalidScope = errors.New("idem: invalid scope")
	// ErrInvalidBody is returned for a request whose fingerprint is empty
	// or not valid UTF-8, before any write, and by Fingerprint for a JSON
	// body it cannot put in canonical form.
	ErrInvalidBody = errors.New("idem: body cannot be fingerprinted")

	// ErrResponseTooLarge is returned (as a *LimitError) when the completed
	// record would be over DynamoDB's 400 KB item limit.
	ErrResponseTooLarge = errors.New("idem: response too large to store")
	// ErrItemTooLarge is returned (as a *LimitError) for a business write
	// over DynamoDB's 400 KB item limit.
	ErrItemTooLarge = errors.New("idem: business item too large")
	// ErrTooManyWrites is returned (as a *LimitError) when the writes and
	// the record make more than DynamoDB's 100 actions in one transaction.
	ErrTooManyWrites = errors.New("idem: too many writes for one transaction")
	// ErrTransactionTooLarge is returned (as a *LimitError) when the
	// transaction would be over DynamoDB's 4 MB.
	ErrTransactionTooLarge = errors.New("idem: transaction too large")

	// ErrInvalidOptions is returned by New, and by the front doors as they
	// are built, for options that are missing or out of range.
	ErrInvalidOptions = errors.New("idem: invalid options")
	// ErrMisconfigured is returned when DynamoDB refuses a table itself: it
	// does not exist (ResourceNotFoundException), the role may not use it
	// (AccessDeniedException, an unrecognised client), or its key schema
	// does not fit the record (a ValidationException on a call on the
	// record alone: a hash key that is not the string AttrPK, a sort key).
	// A refused claim, and a refusal for the key schema, is a definite
	// failure; a commit refused otherwise is settled like any unknown
	// outcome first, and is ErrMisconfigured only where the settling lapse
	// shows nothing landed, or is refused for the table too. It is also what CheckSingleRegion returns for a table with
	// replicas in other Regions.
	ErrMisconfigured = errors.New("idem: the idempotency table cannot be used as configured")

	// ErrNoRecord is returned by the operator's calls when the table holds
	// no live record for the key.
	ErrNoRecord = errors.New("idem: no record for this key")
	// ErrWrongState is returned when an operator's change does not fit the
	// record's state: Lapse of a completed key (it would undo nothing), or
	// Delete of one in progress (lapse it instead, so that it stays bound
	// to its request).
	ErrWrongState = errors.New("idem: the change does not fit the record's state")
	// ErrRecordChanged is returned when the record is no longer the one the
	// operator read (another attempt took it over or completed it).
	ErrRecordChanged = errors.New("idem: the record changed since it was read")
	// ErrNoReason is returned for an operator's change without a reason,
	// which the log needs.
	ErrNoReason = errors.New("idem: a change needs a reason")
)

// InProgressError is returned while another request holds the key.
type InProgressError struct {
	// RetryAfter is how long until the holder's lease ends, at least 1s.
	RetryAfter time.Duration
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("%v; retry after %v", ErrInProgress, e.RetryAfter)
}

// Is makes errors.Is(err, ErrInProgress) true.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// LimitError is returned for something over a limit: what it is, its size
// and the limit, in bytes or in actions. Unwrap gives the sentinel it
// matches: ErrResponseTooLarge, ErrItemTooLarge, ErrTooManyWrites,
// ErrTransactionTooLarge, ErrInvalidKey or ErrInvalidScope.
type LimitError struct {
	What        string // "completed record", "write 3", "transaction", "key", "scope"
	Size, Limit int
	Err         error
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: %s is %d, over the limit of %d", e.Err, e.What, e.Size, e.Limit)
}

func (e *LimitError) Unwrap() error { return e.Err }
