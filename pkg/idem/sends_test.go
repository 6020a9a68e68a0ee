package idem_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
)

// TestWhatEachPathSends holds the docs of Do, DoAtomic, Tx and Commit to
// the calls each sends for a first request: Do the claim's PutItem, then a
// TransactWriteItems with the writes or, with none, a PutItem of the record
// alone; DoAtomic that commit alone; Commit the writes' TransactWriteItems,
// and nothing for a Tx with none. (A fault meant for a lost commit must be
// injected into the call that is sent.)
func TestWhatEachPathSends(t *testing.T) {
	cases := []struct {
		path   string
		writes bool
		want   map[string]int
	}{
		{"Do", true, map[string]int{"PutItem": 1, "TransactWriteItems": 1}},
		{"Do", false, map[string]int{"PutItem": 2}},
		{"DoAtomic", true, map[string]int{"TransactWriteItems": 1}},
		{"DoAtomic", false, map[string]int{"PutItem": 1}},
		{"Commit", true, map[string]int{"TransactWriteItems": 1}},
		{"Commit", false, map[string]int{}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s with writes %v", tc.path, tc.writes), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				if tc.writes {
					tx.Add(f.OrderPut("alice", "o1", "first"), nil)
				}
				return idem.Response{StatusCode: 201}, nil
			}
			var err error
			switch tc.path {
			case "Do":
				_, err = f.Store.Do(ctx, req("alice", "k1", `{}`), work)
			case "DoAtomic":
				_, err = f.Store.DoAtomic(ctx, req("alice", "k1", `{}`), work)
			case "Commit":
				var tx idem.Tx
				if _, err = work(ctx, &tx); err == nil {
					_, err = f.Store.Commit(ctx, &tx)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.DB.Calls(); !maps.Equal(got, tc.want) {
				t.Fatalf("sent %v, want %v", got, tc.want)
			}
			if tc.path != "Commit" && str(f.Record("alice", "k1"), "status") != "COMPLETED" {
				t.Fatal("the record is not completed")
			}
			if (f.Order("alice", "o1") != nil) != tc.writes {
				t.Fatalf("the order is there: %v, want %v", f.Order("alice", "o1") != nil, tc.writes)
			}
		})
	}
}
