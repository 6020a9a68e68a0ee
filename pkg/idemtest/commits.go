package idemtest

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

// commits reports whether in writes an idempotency record completed: the
// commit of Do or DoAtomic, with business writes (a TransactWriteItems) or
// without (a PutItem). A claim or a hand-back writes one in progress.
func commits(in any) bool {
	switch in := in.(type) {
	case *dynamodb.PutItemInput:
		return completedRecord(in.Item)
	case *dynamodb.TransactWriteItemsInput:
		for _, w := range in.TransactItems {
			if w.Put != nil && completedRecord(w.Put.Item) {
				return true
			}
		}
	}
	return false
}

// completedRecord: item is an idempotency record (its hash key, a lease
// token and a fingerprint), completed.
func completedRecord(item map[string]types.AttributeValue) bool {
	status, ok := item["status"].(*types.AttributeValueMemberS)
	_, pk := item[idem.AttrPK]
	_, token := item["lease_token"]
	_, fp := item["fingerprint"]
	return ok && status.Value == "COMPLETED" && pk && token && fp
}
