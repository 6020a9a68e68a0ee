package idem

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// sized is an item of exactly n bytes as DynamoDB counts them: a one-byte
// name and a binary value of the rest, under its own key.
func sized(id string, n int) map[string]types.AttributeValue {
	key := &types.AttributeValueMemberS{Value: id}
	rest := n - len("k") - len(id) - len("b")
	return map[string]types.AttributeValue{"k": key, "b": &types.AttributeValueMemberB{Value: make([]byte, rest)}}
}

func put(id string, n int) queued {
	return queued{Item: types.TransactWriteItem{Put: &types.Put{TableName: aws.String("t"), Item: sized(id, n)}}}
}

// TestTheLimitsAreDynamoDBsToTheByte holds checkTransaction to DynamoDB's
// own lines: what is exactly at a limit goes to DynamoDB, which takes it,
// and a byte or an action past it is refused here with its LimitError, so
// that the library never refuses a transaction DynamoDB would run nor
// sends one it must refuse. An update, a delete and a condition check
// weigh their key and their values together.
func TestTheLimitsAreDynamoDBsToTheByte(t *testing.T) {
	record := func(n int) *types.Put { return &types.Put{Item: sized("rec", n)} }
	var hundred, ninetyNine []queued
	for i := range maxTransactionItems {
		hundred = append(hundred, put("w"+strconv.Itoa(i), 10))
	}
	ninetyNine = hundred[:maxTransactionItems-1]
	var fourMiB []queued // eleven writes, each under the item limit, whose bytes add up to exactly 4 MiB
	for i := range 11 {
		n := maxTransactionSize / 11
		if i == 0 {
			n += maxTransactionSize % 11
		}
		fourMiB = append(fourMiB, put("w"+strconv.Itoa(i), n))
	}
	key := map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "u1"}}
	values := map[string]types.AttributeValue{":b": &types.AttributeValueMemberB{Value: make([]byte, maxItemSize-ItemSize(key)-len(":b")+1)}}
	update := queued{Item: types.TransactWriteItem{Update: &types.Update{TableName: aws.String("t"), Key: key, ExpressionAttributeValues: values}}}
	del := queued{Item: types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String("t"), Key: key, ExpressionAttributeValues: values}}}
	check := queued{Item: types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: key, ExpressionAttributeValues: values}}}
	cases := []struct {
		name   string
		record *types.Put
		writes []queued
		want   error // nil: sent
	}{
		{"a completed record of the item limit", record(maxItemSize), nil, nil},
		{"a completed record a byte over", record(maxItemSize + 1), nil, ErrResponseTooLarge},
		{"a write of the item limit", nil, []queued{put("w", maxItemSize)}, nil},
		{"a write a byte over", nil, []queued{put("w", maxItemSize+1)}, ErrItemTooLarge},
		{"an update whose key and values are a byte over", nil, []queued{update}, ErrItemTooLarge},
		{"a delete whose key and values are a byte over", nil, []queued{del}, ErrItemTooLarge},
		{"a condition check whose key and values are a byte over", nil, []queued{check}, ErrItemTooLarge},
		{"a hundred writes alone", nil, hundred, nil},
		{"ninety-nine writes and the record", record(10), ninetyNine, nil},
		{"a hundred writes and the record", record(10), hundred, ErrTooManyWrites},
		{"writes of 4 MiB together", nil, fourMiB, nil},
		{"writes a byte over 4 MiB together", nil, append(fourMiB[:10:10], put("w10", maxTransactionSize/11+1)), ErrTransactionTooLarge},
	}
	for _, tc := range cases {
		err := checkTransaction("idem", tc.record, tc.writes)
		var limit *LimitError
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s: %v, want it sent", tc.name, err)
		case tc.want != nil && (!errors.Is(err, tc.want) || !errors.As(err, &limit) || limit.Size != limit.Limit+1):
			t.Errorf("%s: %v, want %v one over its limit", tc.name, err, tc.want)
		}
	}
}

// TestTwoActionsOnOneItemNameBoth: the refusal names the two writes by
// their own indexes, the record's own action as the idempotency record,
// so that a caller finds the writes it queued twice.
func TestTwoActionsOnOneItemNameBoth(t *testing.T) {
	rec := &types.Put{Item: map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: "s#k"}}}
	update := func(table, pk, v string) queued {
		return queued{Item: types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table),
			Key: map[string]types.AttributeValue{pk: &types.AttributeValueMemberS{Value: v}}}}}
	}
	cases := []struct {
		name   string
		writes []queued
		want   string
	}{
		{"two writes to one item", []queued{update("t", "k", "a"), update("t", "k", "b"), update("t", "k", "a")}, "write 2 and write 0 are the same item"},
		{"a write to the record", []queued{update("t", "k", "a"), update("idem", AttrPK, "s#k")}, "write 1 and the idempotency record are the same item"},
	}
	for _, tc := range cases {
		if err := checkTransaction("idem", rec, tc.writes); !errors.Is(err, ErrInvalidWrite) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidWrite saying %q", tc.name, err, tc.want)
		}
	}
}

// TestOptionsTakeTheirDocumentedDefaults: New fills what Options leaves
// zero as Options documents it (a 30 s lease, a 1 s commit reserve never
// over a quarter of the lease, polls every 100 ms), and makes no call.
func TestOptionsTakeTheirDocumentedDefaults(t *testing.T) {
	var none DynamoDBAPI = struct{ DynamoDBAPI }{} // any call would panic: New makes none
	for _, c := range []struct {
		lease, reserve time.Duration
	}{
		{0, time.Second},
		{2 * time.Second, 500 * time.Millisecond},
	} {
		s, err := New(none, "idem", func(o *Options) { o.Lease = c.lease })
		if err != nil {
			t.Fatal(err)
		}
		want := c.lease
		if want == 0 {
			want = 30 * time.Second
		}
		if s.opts.Lease != want {
			t.Errorf("lease %v, want %v", s.opts.Lease, want)
		}
		if s.opts.CommitReserve != c.reserve || s.opts.PollInterval != 100*time.Millisecond {
			t.Errorf("with a lease of %v: commit reserve %v, poll interval %v; want %v and 100ms", c.lease, s.opts.CommitReserve, s.opts.PollInterval, c.reserve)
		}
	}
}

// TestASetCookieHeaderWeighsNothingInTheRecord: a Set-Cookie header is
// never stored, and adds not a byte to the record (no empty map of headers
// in its place), so that a response at the item limit with one is stored
// as it would be without it. Any other header is stored.
func TestASetCookieHeaderWeighsNothingInTheRecord(t *testing.T) {
	body := []byte(`{"id":"o1"}`)
	bare := encodeResponse(Response{StatusCode: 201, Body: body})
	for _, h := range []map[string]string{{"Set-Cookie": "s=1; HttpOnly"}, {"set-cookie": "s=1", "SET-COOKIE": "t=2"}} {
		got := encodeResponse(Response{StatusCode: 201, Header: h, Body: body})
		m := got.(*types.AttributeValueMemberM).Value
		if _, stored := m["headers"]; stored || valueSize(got) != valueSize(bare) {
			t.Errorf("headers %v: a record of %d bytes (headers stored: %v), want %d, none", h, valueSize(got), stored, valueSize(bare))
		}
	}
	kept := encodeResponse(Response{StatusCode: 201, Header: map[string]string{"Set-Cookie": "s=1", "Location": "/o1"}, Body: body})
	if h, ok := kept.(*types.AttributeValueMemberM).Value["headers"].(*types.AttributeValueMemberM); !ok || len(h.Value) != 1 || h.Value["Location"] == nil {
		t.Errorf("a Location beside a Set-Cookie: %v, want Location stored alone", kept)
	}
}
