package idem

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
)

// TestHandEncodingMatchesAttributeValue holds record.item, written by hand
// for speed, to what attributevalue makes of the struct tags, and checks the
// round trip through decodeRecord.
func TestHandEncodingMatchesAttributeValue(t *testing.T) {
	for _, r := range []record{
		{PK: "5:alice:k", Scope: "alice", Key: "k", Fingerprint: "v1:ab", Status: statusInProgress, LeaseToken: "T", LeaseUntil: 1796212800123, ExpiresAt: 1796299200, Attempts: 2, CreatedAt: 1796212800000},
		{PK: "1:b:k", Scope: "b", Key: "k", Fingerprint: "v1:cd", Status: statusCompleted, LeaseToken: "U", LeaseUntil: 1, ExpiresAt: 2, Attempts: 1, CreatedAt: 3, CompletedAt: 4,
			Response: &storedResponse{StatusCode: 201, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte{0, 1, 0xff}}},
		{PK: "1:b:k", Status: statusCompleted, Response: &storedResponse{StatusCode: 204}},
	} {
		want, err := attributevalue.MarshalMap(&r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.item(); !reflect.DeepEqual(got, want) {
			t.Errorf("hand encoding\n%#v\nattributevalue\n%#v", got, want)
		}
		back, err := decodeRecord(r.item())
		if err != nil || !reflect.DeepEqual(*back, r) {
			t.Errorf("round trip: %+v, %v; want %+v", back, err, r)
		}
	}
}
