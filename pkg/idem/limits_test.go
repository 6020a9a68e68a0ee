package idem_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

func TestInvalidRequestsFailBeforeAnyCall(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name  string
		req   idem.Request
		want  error
		what  string // the *LimitError's What and Limit, for a limit
		limit int
	}{
		{"empty scope", idem.Request{Scope: "", Key: "k", Fingerprint: "fp"}, idem.ErrInvalidScope, "", 0},
		{"scope too long", idem.Request{Scope: strings.Repeat("s", idem.MaxScopeLength+1), Key: "k", Fingerprint: "fp"}, idem.ErrInvalidScope, "scope", idem.MaxScopeLength},
		{"empty key", idem.Request{Scope: "alice", Key: "", Fingerprint: "fp"}, idem.ErrInvalidKey, "", 0},
		{"key too long", idem.Request{Scope: "alice", Key: strings.Repeat("k", 256), Fingerprint: "fp"}, idem.ErrInvalidKey, "key", idem.MaxKeyLength},
		{"control character", idem.Request{Scope: "alice", Key: "a\nb", Fingerprint: "fp"}, idem.ErrInvalidKey, "", 0},
		{"non-ASCII", idem.Request{Scope: "alice", Key: "clé", Fingerprint: "fp"}, idem.ErrInvalidKey, "", 0},
		{"no fingerprint", idem.Request{Scope: "alice", Key: "k"}, idem.ErrInvalidBody, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.DB.Reset()
			var runs atomic.Int32
			_, err := f.Store.Do(context.Background(), tc.req, f.createOrder("alice", "o", &runs))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			checkLimit(t, err, tc.what, tc.limit)
			if f.DB.Total() != 0 || runs.Load() != 0 {
				t.Fatalf("%d calls and %d runs, want none", f.DB.Total(), runs.Load())
			}
		})
	}
}

// A request at each limit is served, as a byte past it is refused above:
// a key of MaxKeyLength bytes, each one of printable ASCII's first and
// last (space and tilde), and a scope of MaxScopeLength bytes, each
// with a record of its own.
func TestRequestsAtTheLimitsAreServed(t *testing.T) {
	f := newFixture(t)
	for name, r := range map[string]idem.Request{
		"a key of the limit":              {Scope: "alice", Key: strings.Repeat("k", idem.MaxKeyLength), Fingerprint: "fp"},
		"a key of the first and the last": {Scope: "alice", Key: " ~", Fingerprint: "fp"},
		"a scope of the limit":            {Scope: strings.Repeat("s", idem.MaxScopeLength), Key: "k", Fingerprint: "fp"},
	} {
		t.Run(name, func(t *testing.T) {
			var runs atomic.Int32
			if res, err := f.Store.Do(context.Background(), r, f.createOrder(r.Scope, r.Key, &runs)); err != nil || res.Replayed || runs.Load() != 1 {
				t.Fatalf("%+v, %v after %d runs; want it served", res, err, runs.Load())
			}
		})
	}
	for _, c := range []byte{0x1f, 0x7f} {
		if err := idem.ValidateKey("a" + string(c)); !errors.Is(err, idem.ErrInvalidKey) {
			t.Errorf("a key with byte 0x%02x: %v, want ErrInvalidKey", c, err)
		}
	}
}

func TestOversizedResultsAreRefusedAndLeaseLapsed(t *testing.T) {
	big := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name string
		work func(f *fixture) idem.Work
		want error
		// what, limit: the *LimitError's data (limit 0: no LimitError).
		what  string
		limit int
	}{
		{"response over 400 KB", func(f *fixture) idem.Work {
			return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				return idem.Response{StatusCode: 200, Body: bytes.Repeat([]byte("x"), (400 << 10))}, nil
			}
		}, idem.ErrResponseTooLarge, "completed record", 400 << 10},
		{"100 business writes", func(f *fixture) idem.Work {
			return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				for i := range 100 {
					tx.Add(f.OrderPut("alice", strconv.Itoa(i), "n"), nil)
				}
				return idem.Response{StatusCode: 200}, nil
			}
		}, idem.ErrTooManyWrites, "100 writes", 100},
		{"business item over 400 KB", func(f *fixture) idem.Work {
			return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				tx.Add(f.OrderPut("alice", "o", big((400<<10))), nil)
				return idem.Response{StatusCode: 200}, nil
			}
		}, idem.ErrItemTooLarge, "write 0", 400 << 10},
		{"transaction over 4 MB", func(f *fixture) idem.Work {
			return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				for i := range 11 {
					tx.Add(f.OrderPut("alice", strconv.Itoa(i), big(390*1024)), nil)
				}
				return idem.Response{StatusCode: 200}, nil
			}
		}, idem.ErrTransactionTooLarge, "transaction", 4 << 20},
		{"write with no action", func(f *fixture) idem.Work {
			return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				tx.Add(types.TransactWriteItem{}, nil)
				return idem.Response{StatusCode: 200}, nil
			}
		}, idem.ErrInvalidWrite, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.Store.Do(context.Background(), req("alice", "k1", `{}`), tc.work(f))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			checkLimit(t, err, tc.what, tc.limit)
			// The claim, then the lapse: no commit was attempted.
			if calls := f.DB.Calls(); calls["TransactWriteItems"] != 0 || calls["PutItem"] != 1 || calls["UpdateItem"] != 1 || f.DB.Total() != 2 {
				t.Fatalf("calls = %v, want the claim and the lapse only", calls)
			}
			if f.Order("alice", "0") != nil || f.Order("alice", "o") != nil {
				t.Fatal("a business write landed")
			}
			f.Lapsed("alice", "k1", req("alice", "k1", `{}`).Fingerprint)
		})
	}
}

func TestJustUnderTheLimitsCommits(t *testing.T) {
	f := newFixture(t)
	work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		for i := range 99 {
			tx.Add(f.OrderPut("alice", strconv.Itoa(i), "n"), nil)
		}
		return idem.Response{StatusCode: 200, Body: bytes.Repeat([]byte("x"), 390*1024)}, nil
	}
	if _, err := f.Store.Do(context.Background(), req("alice", "k1", `{}`), work); err != nil {
		t.Fatalf("99 writes and a 390 KB response: %v", err)
	}
	if f.Order("alice", "98") == nil {
		t.Fatal("writes missing")
	}
}

func TestItemSizeFollowsDynamoDBRules(t *testing.T) {
	cases := []struct {
		name string
		item map[string]types.AttributeValue
		want int
	}{
		{"string", map[string]types.AttributeValue{"ab": &types.AttributeValueMemberS{Value: "héllo"}}, 2 + 6},
		{"number", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "12345"}}, 1 + 3 + 1},
		{"number zeroes trimmed", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "-001200.00"}}, 1 + 1 + 1 + 1}, // a pair of digits, the sign
		{"binary", map[string]types.AttributeValue{"b": &types.AttributeValueMemberB{Value: []byte{1, 2, 3}}}, 1 + 3},
		{"bool and null", map[string]types.AttributeValue{"t": &types.AttributeValueMemberBOOL{Value: true}, "z": &types.AttributeValueMemberNULL{Value: true}}, 2 + 2},
		{"empty map", map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{}}, 1 + 3},
		{"map", map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "v"}}}}, 1 + 3 + 1 + 1 + 1},
		{"list", map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "ab"}, &types.AttributeValueMemberBOOL{}}}}, 1 + 3 + (1 + 2) + (1 + 1)},
		{"string set", map[string]types.AttributeValue{"ss": &types.AttributeValueMemberSS{Value: []string{"a", "bc"}}}, 2 + 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := idem.ItemSize(tc.item); got != tc.want {
				t.Fatalf("ItemSize = %d, want %d", got, tc.want)
			}
		})
	}
}

// checkLimit fails t unless err carries its limit's data, as a *LimitError
// that says what was over, how big it was and the limit (limit 0: err is no
// LimitError, since nothing was over a limit).
func checkLimit(t *testing.T, err error, what string, limit int) {
	t.Helper()
	var le *idem.LimitError
	switch {
	case limit == 0 && errors.As(err, &le):
		t.Fatalf("err %v is a LimitError, and no limit was passed", err)
	case limit == 0:
	case !errors.As(err, &le):
		t.Fatalf("err %v carries no *LimitError", err)
	case !strings.Contains(le.What, what) || le.Limit != limit || le.Size <= le.Limit:
		t.Fatalf("LimitError %+v, want %q over the limit of %d", le, what, limit)
	case !strings.Contains(err.Error(), strconv.Itoa(le.Size)) || !strings.Contains(err.Error(), strconv.Itoa(limit)):
		t.Fatalf("message %q names neither the size nor the limit", err)
	}
}

// A ConflictFunc's response passes the size check every other path makes,
// on DoAtomic as on Do: ErrResponseTooLarge, nothing stored.
func TestConflictResponsePastTheLimitIsRefused(t *testing.T) {
	for _, path := range []string{"Do", "DoAtomic"} {
		t.Run(path, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if _, err := f.Raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Business), Item: f.OrderPut("alice", "taken", "existing").Put.Item}); err != nil {
				t.Fatal(err)
			}
			do := map[string]func(context.Context, idem.Request, idem.Work) (idem.Result, error){"Do": f.Store.Do, "DoAtomic": f.Store.DoAtomic}[path]
			_, err := do(ctx, req("alice", "k1", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				tx.Add(f.OrderPut("alice", "taken", "new"), func(map[string]types.AttributeValue) (idem.Response, error) {
					return idem.Response{StatusCode: 409, Body: bytes.Repeat([]byte("x"), (400 << 10))}, nil
				})
				return idem.Response{StatusCode: 201}, nil
			})
			if !errors.Is(err, idem.ErrResponseTooLarge) {
				t.Fatalf("err = %v, want ErrResponseTooLarge", err)
			}
			if st := str(f.Record("alice", "k1"), "status"); st == "COMPLETED" {
				t.Fatal("an oversized response was stored")
			}
		})
	}
}
