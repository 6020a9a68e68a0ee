package idem_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// misfitTable creates a table whose key schema DynamoDB refuses the record
// for, and deletes it when the test ends.
func misfitTable(t *testing.T, db *dynamodb.Client, attrs []types.AttributeDefinition, keys []types.KeySchemaElement) string {
	t.Helper()
	name := "test-misfit-" + strings.ToLower(rand.Text()[:10])
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name), AttributeDefinitions: attrs, KeySchema: keys, BillingMode: types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) // best effort: a table left behind costs a test engine only space
	})
	return name
}

// misfits are the tables a Store cannot use: its hash key pk a number or
// binary, or a sort key beside it.
func misfits(t *testing.T, db *dynamodb.Client) map[string]string {
	hash := []types.KeySchemaElement{{AttributeName: aws.String(idem.AttrPK), KeyType: types.KeyTypeHash}}
	def := func(name string, typ types.ScalarAttributeType) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: typ}
	}
	return map[string]string{
		"pk a number": misfitTable(t, db, []types.AttributeDefinition{def(idem.AttrPK, types.ScalarAttributeTypeN)}, hash),
		"pk binary":   misfitTable(t, db, []types.AttributeDefinition{def(idem.AttrPK, types.ScalarAttributeTypeB)}, hash),
		"a sort key": misfitTable(t, db, []types.AttributeDefinition{def(idem.AttrPK, types.ScalarAttributeTypeS), def("sk", types.ScalarAttributeTypeS)},
			append(hash, types.KeySchemaElement{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange})),
	}
}

// TestATableOfAnotherKeySchemaIsMisconfigured: on a table whose key schema
// does not fit the record, DynamoDB refuses every claim with a
// ValidationException. That is ErrMisconfigured (the doors' non-retryable
// 500), naming the table and the cause, logged once, in one call: no
// hand-back of a lease never taken, never an unknown outcome.
func TestATableOfAnotherKeySchemaIsMisconfigured(t *testing.T) {
	raw := idemtest.Client(t)
	ctx := context.Background()
	orders := testbed.OrdersTable(t, raw)
	for name, table := range misfits(t, raw) {
		for _, path := range []string{"Do", "DoAtomic", "DoAtomic with writes"} {
			t.Run(name+" "+path, func(t *testing.T) {
				var buf bytes.Buffer
				db := &testbed.Counter{API: raw}
				metrics := &recorder{}
				s, err := idem.New(db, table, func(o *idem.Options) {
					o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
					o.Metrics = metrics
				})
				if err != nil {
					t.Fatal(err)
				}
				do, calls := s.Do, 1
				if path != "Do" {
					do, calls = s.DoAtomic, 2 // the commit, and the read that tells the table from the writes
				}
				_, err = do(ctx, req("alice", "k1", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
					if path == "DoAtomic with writes" {
						tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(orders), Item: map[string]types.AttributeValue{
							"scope": &types.AttributeValueMemberS{Value: "alice"}, "order_id": &types.AttributeValueMemberS{Value: "o1"},
						}}}, nil)
					}
					return idem.Response{StatusCode: 201}, nil
				})
				if !errors.Is(err, idem.ErrMisconfigured) || !strings.Contains(err.Error(), table) || !strings.Contains(err.Error(), "ValidationException") {
					t.Fatalf("err %v, want ErrMisconfigured naming the table and the cause", err)
				}
				if db.Total() != calls {
					t.Fatalf("calls %v, want %d: nothing handed back, nothing sent again", db.Calls(), calls)
				}
				if o, _ := metrics.last(); o != idem.OutcomeFailed {
					t.Fatalf("Metrics saw %q, want %q", o, idem.OutcomeFailed)
				}
				log := buf.String()
				if strings.Count(log, "\n") != 1 || !strings.Contains(log, table) || !strings.Contains(log, "ValidationException") || strings.Contains(log, "unknown") {
					t.Fatalf("log %s: want one line naming the table and the cause, never an unknown outcome", log)
				}
			})
		}
		t.Run(name+" Inspect", func(t *testing.T) {
			s, err := idem.New(raw, table)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Inspect(ctx, "alice", "k1"); !errors.Is(err, idem.ErrMisconfigured) || !strings.Contains(err.Error(), table) {
				t.Fatalf("Inspect: %v, want ErrMisconfigured naming the table", err)
			}
		})
	}
}

// TestReleasesOnATableOfAnotherKeySchemaAreMisconfigured: the lapse and the
// hand-back, refused for the table's key schema, are ErrMisconfigured at
// once, each in one call: a refusal is not sent again until a bound runs
// out.
func TestReleasesOnATableOfAnotherKeySchemaAreMisconfigured(t *testing.T) {
	raw := idemtest.Client(t)
	ctx := context.Background()
	for name, table := range misfits(t, raw) {
		db := &testbed.Counter{API: raw}
		s, err := idem.New(db, table)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.LapseOf(ctx, "alice", "k1"); !errors.Is(err, idem.ErrMisconfigured) || db.Get("UpdateItem") != 1 {
			t.Fatalf("%s: lapse: %v after %v calls, want ErrMisconfigured after one", name, err, db.Calls())
		}
		if err := s.HandBackOf(ctx, req("alice", "k1", `{}`)); !errors.Is(err, idem.ErrMisconfigured) || db.Get("PutItem") != 1 {
			t.Fatalf("%s: hand-back: %v after %v calls, want ErrMisconfigured after one", name, err, db.Calls())
		}
	}
}

// TestABusinessWriteDynamoDBRefusesIsAnInvalidWrite: on a table that fits
// the record, a business write DynamoDB refuses as written (its key of the
// wrong type, here) is ErrInvalidWrite on Do and DoAtomic, never a
// misconfigured table nor an error the same request could retry past;
// DoAtomic tells it from a table that does not fit by one read.
func TestABusinessWriteDynamoDBRefusesIsAnInvalidWrite(t *testing.T) {
	for _, path := range []string{"Do", "DoAtomic"} {
		t.Run(path, func(t *testing.T) {
			f := newFixture(t)
			do := f.Store.Do
			if path == "DoAtomic" {
				do = f.Store.DoAtomic
			}
			_, err := do(context.Background(), req("alice", "k1", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(f.Business), Item: map[string]types.AttributeValue{
					"scope": &types.AttributeValueMemberS{Value: "alice"}, "order_id": &types.AttributeValueMemberN{Value: "1"},
				}}}, nil)
				return idem.Response{StatusCode: 201}, nil
			})
			if !errors.Is(err, idem.ErrInvalidWrite) || errors.Is(err, idem.ErrMisconfigured) {
				t.Fatalf("err %v (calls %v), want ErrInvalidWrite", err, f.DB.Calls())
			}
			if reads := f.DB.Get("GetItem"); reads != map[string]int{"Do": 0, "DoAtomic": 1}[path] {
				t.Fatalf("calls %v: %d reads", f.DB.Calls(), reads)
			}
		})
	}
}

// TestAMisconfiguredTableIsADefiniteFailure: a table that does not exist is
// a definite failure, ErrMisconfigured naming the table, logged with the
// table and the cause and observed as OutcomeFailed, on Do and DoAtomic
// alike (every door answers it as a 500 with no Retry-After: the doors'
// test of the same name).
func TestAMisconfiguredTableIsADefiniteFailure(t *testing.T) {
	for _, atomic := range []bool{false, true} {
		t.Run(fmt.Sprintf("atomic %v", atomic), func(t *testing.T) {
			var buf bytes.Buffer
			metrics := &recorder{}
			s, err := idem.New(idemtest.Client(t), "no-such-table", func(o *idem.Options) {
				o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
				o.Metrics = metrics
			})
			if err != nil {
				t.Fatal(err)
			}
			do := s.Do
			if atomic {
				do = s.DoAtomic
			}
			_, err = do(context.Background(), req("alice", "k1", `{}`), ok)
			if !errors.Is(err, idem.ErrMisconfigured) || !strings.Contains(err.Error(), "no-such-table") {
				t.Fatalf("err %v, want ErrMisconfigured naming the table", err)
			}
			if o, _ := metrics.last(); o != idem.OutcomeFailed {
				t.Fatalf("Metrics saw %q, want %q", o, idem.OutcomeFailed)
			}
			if !strings.Contains(buf.String(), "no-such-table") || !strings.Contains(buf.String(), "ResourceNotFoundException") || strings.Contains(buf.String(), "outcome unknown") {
				t.Fatalf("log %s: want a line naming the table and the cause, never an unknown outcome", buf.String())
			}
		})
	}
}

// A role that may claim but neither commit nor lapse (a policy without
// TransactWriteItems and UpdateItem): the commit is refused, which may
// follow an earlier send that landed, so it is settled; the settling lapse
// is refused for the table as well. Both refusals are the configuration's,
// and nothing landed: a definite ErrMisconfigured, never an unknown outcome
// to wait out.
func TestACommitAndALapseBothRefusedForTheTableAreMisconfigured(t *testing.T) {
	f := newFixture(t)
	fa := &faulty{DynamoDBAPI: f.DB}
	fa.tx = func(context.Context, *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		return nil, apiError("AccessDeniedException")
	}
	fa.update = func(context.Context, *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
		return nil, apiError("AccessDeniedException")
	}
	s, err := idem.New(fa, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now })
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Do(context.Background(), req("alice", "k1", `{}`), f.createOrder("alice", "o1", nil))
	if !errors.Is(err, idem.ErrMisconfigured) || strings.Contains(err.Error(), "unknown") || f.Order("alice", "o1") != nil {
		t.Fatalf("err %v, the order written %v; want ErrMisconfigured, definite, nothing written", err, f.Order("alice", "o1") != nil)
	}
}

// The work ran (an outside effect, say a charge) and the commit is refused
// because a business table is missing: a definite 500 misconfigured, the
// lease lapsed for the retry, and no claim that nothing was done.
func TestAMissingBusinessTableNeverSaysNothingWasDone(t *testing.T) {
	f := newFixture(t)
	var charged atomic.Int32
	h := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
		charged.Add(1) // the provider call
		w := f.OrderPut("alice", "o1", "x")
		w.Put.TableName = &[]string{"no-such-orders"}[0]
		tx.Add(w, nil)
		return idem.Response{StatusCode: 201}, nil
	})
	r, _ := h(context.Background(), testbed.APIRequest("alice", map[string]string{"idempotency-key": "k1"}, `{}`))
	if charged.Load() != 1 || r.StatusCode != 500 || r.Headers["Retry-After"] != "" || !strings.Contains(r.Body, `"code":"misconfigured"`) || strings.Contains(r.Body, "nothing was done") {
		t.Fatalf("charged %d, answered %d %v %s; want a 500 misconfigured that does not say nothing was done", charged.Load(), r.StatusCode, r.Headers, r.Body)
	}
	if rec := f.Record("alice", "k1"); str(rec, "status") != "IN_PROGRESS" || num(rec, "lease_until") != "0" {
		t.Fatalf("record %v, want the lease lapsed for the retry", rec)
	}
}
