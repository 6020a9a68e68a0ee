package idem

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB's documented limits. They are enforced here, before any write,
// because emulators are laxer than the service and because a limit found by
// the service mid-protocol would leave a claim to clean up behind a vague
// ValidationException.
const (
	maxItemSize         = 400 * 1024      // one item, names and values
	maxTransactionItems = 100             // actions in one TransactWriteItems
	maxTransactionSize  = 4 * 1024 * 1024 // aggregate size of a transaction
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

// numberSize is how DynamoDB weighs a number: 1 byte per pair of
// significant digits, plus 1, plus 1 more for a negative number. Digits pair
// from the decimal point outward (DynamoDB keeps a number in base 100), so
// a digit alone on either side of the point takes a byte of its own: 1.5
// and 150 are 3 bytes, 100.1 is 4. Leading and trailing zeroes weigh
// nothing. TestItemSizeWeighsNumbersAsDynamoDBDoes holds it to the
// engine's own refusal.
func numberSize(s string) int {
	n := 1
	if strings.HasPrefix(s, "-") {
		n++
	}
	s = strings.TrimLeft(s, "+-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, _ = strconv.Atoi(s[i+1:]) // DynamoDB refuses a number out of its range
		s = s[:i]
	}
	whole, frac, _ := strings.Cut(s, ".")
	// The first significant digit stands for 10^high, the last for 10^low;
	// a pair is the digits of one power of 100.
	var high, low int
	switch w, f := strings.TrimLeft(whole, "0"), strings.TrimRight(frac, "0"); {
	case w == "" && f == "":
		return n // zero
	case w != "":
		high = len(w) - 1
	default:
		high = len(strings.TrimLeft(f, "0")) - len(f) - 1
	}
	switch w, f := strings.TrimRight(whole, "0"), strings.TrimRight(frac, "0"); {
	case f != "":
		low = -len(f)
	default:
		low = len(whole) - len(w)
	}
	return n + floorHalf(high+exp) - floorHalf(low+exp) + 1
}

// floorHalf is x/2 rounded down, negative x included.
func floorHalf(x int) int { return x >> 1 }

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

// checkTransaction refuses, with a named error, what DynamoDB would refuse:
// a completed record over the item limit, too many actions or bytes (the
// record's own action counts as one of the hundred), a write with no action,
// and two actions on one item, the record's included. A nil record is a
// transaction of the writes alone (Function's pass-through).
func checkTransaction(table string, record *types.Put, writes []queued) error {
	total, n := 0, len(writes)
	if record != nil {
		total, n = ItemSize(record.Item), n+1
		if total > maxItemSize {
			return &LimitError{What: "completed record (bytes)", Size: total, Limit: maxItemSize, Err: ErrResponseTooLarge}
		}
	}
	if n > maxTransactionItems {
		return &LimitError{What: fmt.Sprintf("transaction of %d writes and the record (actions)", len(writes)), Size: n, Limit: maxTransactionItems, Err: ErrTooManyWrites}
	}
	for i, w := range writes {
		if w.Item.Put == nil && w.Item.Update == nil && w.Item.Delete == nil && w.Item.ConditionCheck == nil {
			return fmt.Errorf("%w: write %d names no action", ErrInvalidWrite, i)
		}
		size := writeSize(w.Item)
		if size > maxItemSize {
			return &LimitError{What: fmt.Sprintf("write %d (bytes)", i), Size: size, Limit: maxItemSize, Err: ErrItemTooLarge}
		}
		total += size
	}
	if total > maxTransactionSize {
		return &LimitError{What: "transaction (bytes)", Size: total, Limit: maxTransactionSize, Err: ErrTransactionTooLarge}
	}
	return checkDistinctItems(table, record, writes)
}

// checkDistinctItems refuses two actions on one item, which DynamoDB
// refuses with a ValidationException. An update, a delete and a condition
// check name their key; a put's key is among its attributes, whose key
// schema is not known here, so two puts on one item are left to DynamoDB
// (whose refusal is ErrInvalidWrite too).
func checkDistinctItems(table string, record *types.Put, writes []queued) error {
	if len(writes) == 0 {
		return nil
	}
	var buf [8]target            // on the stack for a transaction of a few writes
	targets, first := buf[:0], 0 // first: the index of write 0 in targets
	if record != nil {
		targets, first = append(targets, target{table: table, key: map[string]types.AttributeValue{AttrPK: record.Item[AttrPK]}}), 1
	}
	for _, w := range writes {
		targets = append(targets, targetOf(w.Item))
	}
	for i := 1; i < len(targets); i++ {
		for j := range i {
			if targets[i].same(targets[j]) {
				what := fmt.Sprintf("write %d", j-first)
				if j < first {
					what = "the idempotency record"
				}
				return fmt.Errorf("%w: write %d and %s are the same item; DynamoDB allows one action per item in a transaction", ErrInvalidWrite, i-first, what)
			}
		}
	}
	return nil
}

// target is the item an action touches: its key where the action names it,
// else the whole item of a put.
type target struct {
	table string
	key   map[string]types.AttributeValue // nil for a put
	item  map[string]types.AttributeValue // a put's item
}

func targetOf(w types.TransactWriteItem) target {
	switch {
	case w.Put != nil:
		return target{table: aws.ToString(w.Put.TableName), item: w.Put.Item}
	case w.Update != nil:
		return target{table: aws.ToString(w.Update.TableName), key: w.Update.Key}
	case w.Delete != nil:
		return target{table: aws.ToString(w.Delete.TableName), key: w.Delete.Key}
	}
	return target{table: aws.ToString(w.ConditionCheck.TableName), key: w.ConditionCheck.Key}
}

// same reports whether a and b certainly touch one item: the same table,
// and a key that the other's key or item holds with the same values.
func (a target) same(b target) bool {
	if a.table != b.table || (a.key == nil && b.key == nil) {
		return false
	}
	if a.key == nil {
		a, b = b, a
	}
	other := b.key
	if other == nil {
		other = b.item
	} else if len(other) != len(a.key) {
		return false
	}
	for name, v := range a.key {
		if !sameKeyValue(v, other[name]) {
			return false
		}
	}
	return true
}

// sameKeyValue compares key attribute values, which are strings, numbers or
// binary.
func sameKeyValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	}
	return false
}
