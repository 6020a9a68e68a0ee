package idem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// itemSizeLimit is DynamoDB's item limit, 400 KiB.
const itemSizeLimit = 400 * 1024

// numbersToWeigh are numbers whose weight turns on each of DynamoDB's
// rules: the digits paired outward from the decimal point, leading and
// trailing zeroes, the byte of a negative number, an exponent.
var numbersToWeigh = []string{
	"0", "1", "-1", "9", "10", "99", "100", "150", "1.5", "100.1", "0.1", "0.01", "0.001",
	"-001200.00", "12345", "123456", "-0.5", "1e3", "1.5E-3", "25e-1",
	"12345678901234567890123456789012345678", "-0.00000000000000000000000000000000000001",
}

// weighed is the item pk holding n and a filler that makes ItemSize say
// it weighs size bytes.
func weighed(t *testing.T, pk, n string, size int) map[string]types.AttributeValue {
	t.Helper()
	item := map[string]types.AttributeValue{
		idem.AttrPK: &types.AttributeValueMemberS{Value: pk},
		"n":         &types.AttributeValueMemberN{Value: n},
		"f":         &types.AttributeValueMemberS{},
	}
	item["f"] = &types.AttributeValueMemberS{Value: strings.Repeat("x", size-idem.ItemSize(item))}
	if got := idem.ItemSize(item); got != size {
		t.Fatalf("filler: ItemSize = %d, want %d", got, size)
	}
	return item
}

// ItemSize weighs a number as DynamoDB does: an item of a number that
// ItemSize weighs at exactly 400 KiB is accepted by the engine, and one a
// byte heavier is refused for its size. The boundary is found on the
// engine's own refusal, number by number.
func TestItemSizeWeighsNumbersAsDynamoDBDoes(t *testing.T) {
	db := idemtest.Client(t)
	table := idemtest.Table(t, db)
	ctx := context.Background()
	for _, n := range numbersToWeigh {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: weighed(t, "weighed", n, itemSizeLimit)}); err != nil {
			t.Errorf("%s: an item ItemSize weighs at the limit was refused: %v", n, err)
		}
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: weighed(t, "weighed", n, itemSizeLimit+1)})
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" || !strings.Contains(ae.ErrorMessage(), "size") {
			t.Errorf("%s: an item ItemSize weighs a byte over the limit: %v, want refused for its size", n, err)
		}
	}
}

// A business write of numbers that weighs exactly 400 KiB is sent and
// commits; one a byte heavier is refused with ErrItemTooLarge before any
// commit is sent, never sent to be refused as ErrInvalidWrite.
func TestAWriteOfNumbersAtTheItemLimitCommitsAndOneByteOverIsTooLarge(t *testing.T) {
	s := idemtest.NewStore(t)
	orders := idemtest.Table(t, s.Client)
	ctx := context.Background()
	for i, n := range []string{"1.5", "150", "100.1", "-1", "-001200.00"} {
		for _, over := range []int{0, 1} {
			item := weighed(t, fmt.Sprintf("order %s %d", n, over), n, itemSizeLimit+over)
			sent := s.Faults.Calls(idemtest.TransactWriteItems)
			r := idem.Request{Scope: "alice", Key: fmt.Sprintf("k%d-%d", i, over), Fingerprint: "fp"}
			_, err := s.Do(ctx, r, func(_ context.Context, tx *idem.Tx) (idem.Response, error) {
				tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(orders), Item: item}}, nil)
				return idem.Response{StatusCode: 201}, nil
			})
			switch {
			case over == 0 && err != nil:
				t.Errorf("%s: a write at the limit: %v, want committed", n, err)
			case over == 1 && (!errors.Is(err, idem.ErrItemTooLarge) || s.Faults.Calls(idemtest.TransactWriteItems) != sent):
				t.Errorf("%s: a write a byte over the limit: %v, want ErrItemTooLarge with no commit sent", n, err)
			}
		}
	}
}
