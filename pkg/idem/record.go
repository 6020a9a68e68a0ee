package idem

import (
	"fmt"
	"strconv"
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
	Cookies    []string          `dynamodbav:"cookies,omitempty"`
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

// item encodes the record by hand, on the hot path of every claim: the same
// attributes attributevalue.MarshalMap writes from the struct tags (a test
// holds the two to each other), at a third of its cost.
func (r *record) item() map[string]types.AttributeValue {
	m := make(map[string]types.AttributeValue, 12)
	m[AttrPK] = &types.AttributeValueMemberS{Value: r.PK}
	m[attrScope] = &types.AttributeValueMemberS{Value: r.Scope}
	m[attrKey] = &types.AttributeValueMemberS{Value: r.Key}
	m[attrFingerprint] = &types.AttributeValueMemberS{Value: r.Fingerprint}
	m[attrStatus] = &types.AttributeValueMemberS{Value: r.Status}
	m[attrLeaseToken] = &types.AttributeValueMemberS{Value: r.LeaseToken}
	m[attrLeaseUntil] = number(r.LeaseUntil)
	m[AttrExpiresAt] = number(r.ExpiresAt)
	m[attrAttempts] = number(int64(r.Attempts))
	m[attrCreatedAt] = number(r.CreatedAt)
	if r.Response != nil {
		m[attrResponse] = encodeResponse(Response(*r.Response))
	}
	if r.CompletedAt != 0 {
		m[attrCompletedAt] = number(r.CompletedAt)
	}
	return m
}

// encodeResponse is storedResponse as attributevalue would encode it.
func encodeResponse(resp Response) types.AttributeValue {
	m := make(map[string]types.AttributeValue, 4)
	m["status"] = number(int64(resp.StatusCode))
	if len(resp.Header) > 0 {
		h := make(map[string]types.AttributeValue, len(resp.Header))
		for k, v := range resp.Header {
			h[k] = &types.AttributeValueMemberS{Value: v}
		}
		m["headers"] = &types.AttributeValueMemberM{Value: h}
	}
	if len(resp.Cookies) > 0 {
		l := make([]types.AttributeValue, len(resp.Cookies))
		for i, c := range resp.Cookies {
			l[i] = &types.AttributeValueMemberS{Value: c}
		}
		m["cookies"] = &types.AttributeValueMemberL{Value: l}
	}
	if len(resp.Body) > 0 {
		m["body"] = &types.AttributeValueMemberB{Value: resp.Body}
	}
	return &types.AttributeValueMemberM{Value: m}
}

func number(n int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
