package idemtest_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// outcome is what a Store made of one request under a fault, then of its
// retry once the faults are spent: what the kit's faults must have in
// common with the real SDK's.
type outcome struct {
	ok, inProgress, leaseLost, workErr bool
	record                             string // "none", "lapsed", "in progress" or "completed"
	order                              bool
	runs                               int32
	retryOK                            bool
	runsAfterRetry                     int32
}

// A scenario's request and work: an order written with the record; with
// failFirst, the work's first run fails (the lapse is then the call that
// matters).
type scenario struct {
	store  *idem.Store
	raw    *dynamodb.Client
	orders string
	landed func()
}

var errWork = errors.New("provider timed out")

func (s scenario) run(t *testing.T, failFirst bool) outcome {
	t.Helper()
	var runs atomic.Int32
	work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		if runs.Add(1) == 1 && failFirst {
			return idem.Response{}, errWork
		}
		tx.Add(types.TransactWriteItem{Put: &types.Put{
			TableName:           aws.String(s.orders),
			Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "o1"}},
			ConditionExpression: aws.String("attribute_not_exists(id)"),
		}}, nil)
		return idem.Response{StatusCode: 201, Body: []byte(`{"id":"o1"}`)}, nil
	}
	req := idem.Request{Scope: "alice", Key: "k1", Fingerprint: "fp1"}
	ctx := context.Background()
	_, err := s.store.Do(ctx, req, work)
	s.landed()
	var busy *idem.InProgressError
	o := outcome{ok: err == nil, inProgress: errors.As(err, &busy), leaseLost: errors.Is(err, idem.ErrLeaseLost), workErr: errors.Is(err, errWork), runs: runs.Load()}
	rec, rerr := s.store.Inspect(ctx, req.Scope, req.Key)
	switch {
	case errors.Is(rerr, idem.ErrNoRecord):
		o.record = "none"
	case rerr != nil:
		t.Fatal(rerr)
	case rec.Status == "IN_PROGRESS" && rec.LeaseUntil.IsZero():
		o.record = "lapsed"
	case rec.Status == "IN_PROGRESS":
		o.record = "in progress"
	default:
		o.record = "completed"
	}
	got, gerr := s.raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.orders), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "o1"}}, ConsistentRead: aws.Bool(true)})
	if gerr != nil {
		t.Fatal(gerr)
	}
	o.order = len(got.Item) > 0
	_, err = s.store.Do(ctx, req, work)
	o.retryOK, o.runsAfterRetry = err == nil, runs.Load()
	return o
}

func ordersTable(t *testing.T, db *dynamodb.Client) string {
	return idemtest.CreateTable(t, db, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
}

// TestFaultsAreTakenAsTheSDKsOwn runs each fault twice: injected by the kit
// above the SDK, and by a fault proxy under a real SDK client (3 attempts,
// the default) on the HTTP the engine answers. The Store must come to the
// same outcome both ways: the kit's errors are classified as the SDK's.
func TestFaultsAreTakenAsTheSDKsOwn(t *testing.T) {
	late := 300 * time.Millisecond
	cases := []struct {
		name      string
		kit       idemtest.Fault
		proxy     faultproxy.Fault
		failFirst bool
	}{
		{"the claim lands, its answer lost", idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.LostAnswer}, faultproxy.Fault{Op: "PutItem", Kind: faultproxy.CommitThenDrop, Times: 3}, false},
		{"the commit lands, its answer lost", idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer}, faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.CommitThenDrop, Times: 3}, false},
		{"the lapse lands, its answer lost", idemtest.Fault{Op: idemtest.UpdateItem, Kind: idemtest.LostAnswer}, faultproxy.Fault{Op: "UpdateItem", Kind: faultproxy.CommitThenDrop, Times: 3}, true},
		{"the commit lands late", idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LandLate, Delay: late}, faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.LandLate, Times: 3, Delay: late}, false},
		{"the claim is throttled", idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Throttle}, faultproxy.Fault{Op: "PutItem", Kind: faultproxy.Throttle, Times: 3}, false},
		{"the commit is throttled", idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.Throttle}, faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.Throttle, Times: 3}, false},
		{"the claim conflicts once", idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Conflict}, faultproxy.Fault{Op: "PutItem", Kind: faultproxy.TransactionConflict, Times: 1}, false},
		{"the claim conflicts past the Store's retries", idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.Conflict, Times: 4}, faultproxy.Fault{Op: "PutItem", Kind: faultproxy.TransactionConflict, Times: 4}, false},
		{"the commit conflicts past the Store's retries", idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.Conflict, Times: 4}, faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.TransactionConflict, Times: 4}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := idemtest.NewStore(t)
			s.Faults.Inject(tc.kit)
			kit := scenario{store: s.Store, raw: s.Client, orders: ordersTable(t, s.Client), landed: s.Faults.Landed}.run(t, tc.failFirst)
			if got := s.Faults.Injected(tc.kit.Op); got != max(tc.kit.Times, 1) {
				t.Fatalf("the kit injected %d faults, want %d", got, max(tc.kit.Times, 1))
			}

			proxy, store := proxied(t)
			proxy.Inject(tc.proxy)
			sdk := scenario{store: store, raw: s.Client, orders: ordersTable(t, s.Client), landed: proxy.Landed}.run(t, tc.failFirst)
			if got := proxy.Injected(tc.proxy.Kind); got != tc.proxy.Times {
				t.Fatalf("the proxy injected %d faults, want %d", got, tc.proxy.Times)
			}
			t.Logf("%+v", kit)
			if kit != sdk {
				t.Fatalf("under the kit's fault: %+v\nunder the SDK's:       %+v", kit, sdk)
			}
		})
	}
}

// proxied is a Store on a fresh table whose client reaches the engine
// through a fault proxy, with the SDK's default 3 attempts (backoff kept
// short).
func proxied(t *testing.T) (*faultproxy.Proxy, *idem.Store) {
	t.Helper()
	ep, err := idemtest.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(ep)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	client := idemtest.Client(t, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = 20 * time.Millisecond })
	})
	store, err := idem.New(client, idemtest.Table(t, client), func(o *idem.Options) { o.Clock = idemtest.NewClock().Now })
	if err != nil {
		t.Fatal(err)
	}
	return proxy, store
}
