package idem_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// An answer never says more than is known: an outcome the Store could not
// read back is never a definite failure, a refusal after a write that
// landed is read as that write, and what is stored is only ever a final
// answer.

// faulty wraps the engine: hooks run instead of the real call when set.
type faulty struct {
	idem.DynamoDBAPI
	tx     func(ctx context.Context, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error)
	update func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
}

func (r *faulty) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if r.tx != nil {
		return r.tx(ctx, in)
	}
	return r.DynamoDBAPI.TransactWriteItems(ctx, in, o...)
}

func (r *faulty) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if r.update != nil {
		return r.update(ctx, in)
	}
	return r.DynamoDBAPI.UpdateItem(ctx, in, o...)
}

func apiError(code string) error { return &smithy.GenericAPIError{Code: code, Message: code} }

// landedThen is a TransactWriteItems that lands on the engine and answers
// with the error code given instead of its success.
func landedThen(t *testing.T, f *fixture, code string) func(context.Context, *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
	return func(ctx context.Context, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		if _, err := f.DB.TransactWriteItems(ctx, in); err != nil {
			t.Fatal(err)
		}
		return nil, apiError(code)
	}
}

// orderThroughHTTP sends one request through the HTTP API's door on s, whose
// handler writes the order o1 and answers 201.
func orderThroughHTTP(f *fixture, s *idem.Store) events.APIGatewayV2HTTPResponse {
	h := idemlambda.HTTPAPI(s, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
		tx.Add(f.OrderPut("alice", "o1", "first"), nil)
		return idem.Response{StatusCode: 201, Body: []byte("created")}, nil
	})
	r, _ := h(context.Background(), testbed.APIRequest("alice", map[string]string{"idempotency-key": "k1"}, `{}`))
	return r
}

// The commit lands and its answer is lost (an unknown outcome); the
// settling lapse is refused with AccessDenied (a role without UpdateItem).
// The refusal of the lapse does not make the commit a definite failure: the
// answer is a 503 to retry under the same key (it was a 500 "misconfigured,
// nothing was done" while the order was written).
func TestUnknownCommitWithARefusedLapseIsNoDefiniteFailure(t *testing.T) {
	f := newFixture(t)
	fa := &faulty{DynamoDBAPI: f.DB}
	fa.tx = landedThen(t, f, "InternalServerError") // the answer lost
	fa.update = func(context.Context, *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
		return nil, apiError("AccessDeniedException")
	}
	s, err := idem.New(fa, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now })
	if err != nil {
		t.Fatal(err)
	}
	r := orderThroughHTTP(f, s)
	// The outcome is unknown to this call: a retry with the same key,
	// never a definite failure.
	if f.Order("alice", "o1") == nil || r.StatusCode != 503 || r.Headers["Retry-After"] == "" || strings.Contains(r.Body, "misconfigured") {
		t.Fatalf("committed, the lapse refused: answered %d %v %s; want 503 with Retry-After", r.StatusCode, r.Headers, r.Body)
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

// An earlier send of the commit landed and the last one is refused
// (AccessDenied: a policy changed between the SDK's sends): the refusal is
// settled like any unknown outcome, and the lapse finds the commit's own
// record, so the answer is its 201 (it was a 500 "nothing was done").
func TestARefusalAfterALandedCommitIsReadAsTheCommit(t *testing.T) {
	f := newFixture(t)
	fa := &faulty{DynamoDBAPI: f.DB}
	fa.tx = landedThen(t, f, "AccessDeniedException")
	s, _ := idem.New(fa, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now })
	r := orderThroughHTTP(f, s)
	// The settling lapse finds the record completed under this lease's
	// own token: the commit's own 201.
	if f.Order("alice", "o1") == nil || r.StatusCode != 201 {
		t.Fatalf("committed, its last send refused: answered %d %s; want the commit's 201", r.StatusCode, r.Body)
	}
}

// A ConflictFunc's 5xx is not stored either: a final 5xx is never stored,
// on every door; the handler runs again on the retry (it was stored and
// replayed forever).
func TestAConflictFuncs5xxIsNeverStored(t *testing.T) {
	for _, status := range []int{500, 503} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			f := newFixture(t)
			if _, err := f.Store.Do(context.Background(), req("alice", "pre", `{}`), f.createOrder("alice", "o1", nil)); err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			h := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
				runs.Add(1)
				tx.Add(f.OrderPut("alice", "o1", "again"), func(map[string]types.AttributeValue) (idem.Response, error) {
					return idem.Response{StatusCode: status, Body: []byte("order store busy, retry")}, nil
				})
				return idem.Response{StatusCode: 201}, nil
			})
			for i := 1; i <= 2; i++ {
				r, _ := h(context.Background(), testbed.APIRequest("alice", map[string]string{"idempotency-key": "k2"}, `{}`))
				if r.StatusCode != status || r.Headers[idemlambda.HeaderReplayed] != "" || runs.Load() != int32(i) {
					t.Fatalf("call %d: %d %q replayed=%q after %d runs; want the conflict's %d, not stored, the handler run again", i, r.StatusCode, r.Body, r.Headers[idemlambda.HeaderReplayed], runs.Load(), status)
				}
			}
			if str(f.Record("alice", "k2"), "status") == "COMPLETED" {
				t.Fatalf("a %d decided by the ConflictFunc was stored as COMPLETED; runs=%d", status, runs.Load())
			}
		})
	}
}

// The delete lands, every answer is lost, and the customer's resend claims
// the key before Delete reads back: the record Delete was given is gone, so
// it is the delete, with its audit line (it was ErrRecordChanged, no line).
func TestALostDeleteThenAReclaimIsADelete(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.Store.Do(ctx, req("frank", "k1", `{}`), ok); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	fa := &faulty{DynamoDBAPI: f.DB}
	fa.tx = func(ctx context.Context, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		if _, err := f.DB.TransactWriteItems(ctx, in); err != nil {
			t.Fatal(err)
		}
		// the resend the operator asked for arrives now, on another Lambda
		if _, err := f.Store.Do(ctx, req("frank", "k1", `{}`), ok); err != nil {
			t.Fatal(err)
		}
		return nil, apiError("InternalServerError")
	}
	ops, _ := idem.New(fa, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now; o.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) })
	rec, err := ops.Inspect(ctx, "frank", "k1")
	if err != nil {
		t.Fatal(err)
	}
	err = ops.Delete(ctx, rec, "ticket 9")
	if errors.Is(err, idem.ErrRecordChanged) || !strings.Contains(buf.String(), "ticket 9") {
		t.Fatalf("the delete landed, yet Delete said %v and logged %q", err, buf.String())
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
