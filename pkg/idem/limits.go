package idem

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB's documented limits. They are enforced here, before any write,
// because emulators are laxer than the service and because a limit found by
// the service mid-protocol would leave a claim to clean up behind a vague
// ValidationException.
const (
	MaxItemSize         = 400 * 1024      // one item, names and values
	MaxTransactionItems = 100             // actions in one TransactWriteItems
	MaxTransactionSize  = 4 * 1024 * 1024 // aggregate size of a transaction
)

// ItemSize returns the size of an item as DynamoDB counts it against the
// 400 KB limit and for capacity: the UTF-8 length of every attribute name plus
// the size of its value.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize follows "DynamoDB item sizes and formats" in the developer guide.
func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3 // a list costs 3 bytes, and 1 more per element
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for name, e := range v.Value {
			n += 1 + len(name) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is 1 byte per two significant digits plus 1, leading and
// trailing zeroes not counted.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	s = strings.Trim(s, "0")
	return (len(s)+1)/2 + 1
}

// writeSize is what one transaction action contributes to the 4 MB limit: the
// whole item for a put, the key and the values an update or condition brings.
func writeSize(w types.TransactWriteItem) int {
	switch {
	case w.Put != nil:
		return ItemSize(w.Put.Item)
	case w.Update != nil:
		return ItemSize(w.Update.Key) + ItemSize(w.Update.ExpressionAttributeValues)
	case w.Delete != nil:
		return ItemSize(w.Delete.Key) + ItemSize(w.Delete.ExpressionAttributeValues)
	case w.ConditionCheck != nil:
		return ItemSize(w.ConditionCheck.Key) + ItemSize(w.ConditionCheck.ExpressionAttributeValues)
	}
	return 0
}

// checkTransaction refuses, with a named error, a transaction that DynamoDB
// would refuse for its size: the record's own action counts as one of the
// hundred.
func checkTransaction(record types.TransactWriteItem, recordSize int, writes []Write) error {
	if recordSize > MaxItemSize {
		return fmt.Errorf("%w: the completed record would be %d bytes, over DynamoDB's %d", ErrResponseTooLarge, recordSize, MaxItemSize)
	}
	if n := len(writes) + 1; n > MaxTransactionItems {
		return fmt.Errorf("%w: %d business writes plus the record make %d actions, over DynamoDB's %d", ErrTooManyWrites, len(writes), n, MaxTransactionItems)
	}
	total := writeSize(record)
	for i, w := range writes {
		if w.Item.Put == nil && w.Item.Update == nil && w.Item.Delete == nil && w.Item.ConditionCheck == nil {
			return fmt.Errorf("%w: write %d names no action", ErrInvalidWrite, i)
		}
		size := writeSize(w.Item)
		if size > MaxItemSize {
			return fmt.Errorf("%w: write %d is %d bytes, over DynamoDB's %d", ErrItemTooLarge, i, size, MaxItemSize)
		}
		total += size
	}
	if total > MaxTransactionSize {
		return fmt.Errorf("%w: %d bytes, over DynamoDB's %d", ErrTransactionTooLarge, total, MaxTransactionSize)
	}
	return nil
}
