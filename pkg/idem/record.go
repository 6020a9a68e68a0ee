package idem

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of the idempotency record. The table's hash key is AttrPK
// and its TTL attribute is AttrExpiresAt; template.yaml must agree, and a test
// checks that it does.
const (
	AttrPK          = "pk"
	AttrExpiresAt   = "expires_at"
	attrScope       = "scope"
	attrKey         = "key"
	attrFingerprint = "fingerprint"
	attrStatus      = "status"
	attrLeaseToken  = "lease_token"
	attrLeaseUntil  = "lease_until"
	attrResponse    = "response"
	attrAttempts    = "attempts"
	attrCreatedAt   = "created_at"
	attrCompletedAt = "completed_at"
)

// The two states of a record. Absent (or expired) is the third.
const (
	StatusInProgress = "IN_PROGRESS"
	StatusCompleted  = "COMPLETED"
)

// record is one (scope, key). Times are in the units DynamoDB needs: the TTL
// attribute must be epoch seconds, the lease is compared in milliseconds.
type record struct {
	PK          string          `dynamodbav:"pk"`
	Scope       string          `dynamodbav:"scope"`
	Key         string          `dynamodbav:"key"`
	Fingerprint string          `dynamodbav:"fingerprint"`
	Status      string          `dynamodbav:"status"`
	LeaseToken  string          `dynamodbav:"lease_token"`
	LeaseUntil  int64           `dynamodbav:"lease_until"`
	ExpiresAt   int64           `dynamodbav:"expires_at"`
	Response    *storedResponse `dynamodbav:"response,omitempty"`
	Attempts    int             `dynamodbav:"attempts"`
	CreatedAt   int64           `dynamodbav:"created_at"`
	CompletedAt int64           `dynamodbav:"completed_at,omitempty"`
}

type storedResponse struct {
	StatusCode int               `dynamodbav:"status"`
	Header     map[string]string `dynamodbav:"headers,omitempty"`
	Body       []byte            `dynamodbav:"body,omitempty"`
}

func (r *record) expired(now time.Time) bool { return r.ExpiresAt < now.Unix() }

func (r *record) leaseLive(now time.Time) bool { return r.LeaseUntil > now.UnixMilli() }

func (r *record) response() Response {
	if r.Response == nil {
		return Response{}
	}
	return Response(*r.Response)
}

// decodeRecord reads an item that DynamoDB returned. A nil or empty item is
// no record, which is not an error.
func decodeRecord(item map[string]types.AttributeValue) (*record, error) {
	if len(item) == 0 {
		return nil, nil
	}
	var r record
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return nil, fmt.Errorf("idem: decode record: %w", err)
	}
	return &r, nil
}

func encodeResponse(resp Response) (types.AttributeValue, error) {
	s := storedResponse(resp)
	av, err := attributevalue.Marshal(&s)
	if err != nil {
		return nil, fmt.Errorf("idem: encode response: %w", err)
	}
	return av, nil
}
