package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// calls records the DynamoDB calls the function's code makes in these
// tests, which its role must grant exactly (apitest.Main).
var calls = &dynamotest.Actions{}

func TestMain(m *testing.M) { os.Exit(apitest.Main(m, "OrderFunction", calls)) }

// functionClient is the client the function's code is handed: its calls
// are recorded.
func functionClient(t *testing.T) *dynamodb.Client {
	return dynamotest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = calls })
}

type fixture struct {
	apitest.Caller
	raw    *dynamodb.Client    // the test's own
	calls  *dynamotest.Counter // the idempotency store's calls
	tables []string
}

func newFixture(t *testing.T, fastPath ...bool) *fixture {
	t.Helper()
	raw := dynamotest.Client(t)
	idemTable := dynamotest.Table(t, raw, "IdempotencyTable")
	orders := dynamotest.Table(t, raw, "OrdersTable")
	fn := functionClient(t)
	counter := &dynamotest.Counter{API: fn}
	store, err := idem.New(counter, idemTable)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{store: store, db: fn, table: orders, scopeClaim: "sub", fastPath: len(fastPath) > 0 && fastPath[0],
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now}
	return &fixture{
		Caller: apitest.Caller{T: t, Routes: apitest.Function(t, "OrderFunction").Routes, Handle: s.routes()},
		raw:    raw, calls: counter, tables: []string{idemTable, orders},
	}
}

const tea = `{"items":[{"sku":"tea","quantity":2}],"note":"green"}`

func orderID(t *testing.T, resp events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	var o struct{ ID string }
	if err := json.Unmarshal([]byte(resp.Body), &o); err != nil || o.ID == "" {
		t.Fatalf("no order id in %s", resp.Body)
	}
	return o.ID
}

func TestCreateOrderOncePerKey(t *testing.T) {
	f := newFixture(t)
	first := f.Send("POST", "/orders", "alice", "k-1", tea)
	if first.StatusCode != 201 {
		t.Fatalf("first = %d %s", first.StatusCode, first.Body)
	}
	again := f.Send("POST", "/orders", "alice", "k-1", tea)
	if again.StatusCode != 201 || again.Body != first.Body || again.Headers[idemlambda.HeaderReplayed] != "true" {
		t.Fatalf("replay = %d %s", again.StatusCode, again.Body)
	}
	if n := apitest.Items(t, f.raw, f.tables[1]); n != 1 {
		t.Fatalf("%d orders, want 1", n)
	}
	id := orderID(t, first)
	if got := f.Send("GET", "/orders/"+id, "alice", "", ""); got.StatusCode != 200 || orderID(t, got) != id {
		t.Fatalf("GET = %d %s", got.StatusCode, got.Body)
	}
	if got := f.Send("GET", "/orders/"+id, "bob", "", ""); got.StatusCode != 404 {
		t.Fatalf("GET as another caller = %d, want 404", got.StatusCode)
	}
	if other := f.Send("POST", "/orders", "alice", "k-1", `{"items":[{"sku":"tea","quantity":3}]}`); other.StatusCode != 422 {
		t.Fatalf("same key, other body = %d, want 422", other.StatusCode)
	}
}

func TestFastPathCreatesAnOrderInOneCall(t *testing.T) {
	for _, fast := range []bool{false, true} {
		f := newFixture(t, fast)
		want := map[bool]int{false: 2, true: 1}[fast]
		first := f.Send("POST", "/orders", "alice", "k-1", tea)
		if first.StatusCode != 201 || f.calls.Total() != want {
			t.Fatalf("fast=%v: first = %d after %v calls, want 201 after %d", fast, first.StatusCode, f.calls.Calls(), want)
		}
		f.calls.Reset()
		again := f.Send("POST", "/orders", "alice", "k-1", tea)
		if again.Body != first.Body || again.Headers[idemlambda.HeaderReplayed] != "true" || f.calls.Total() != 1 {
			t.Fatalf("fast=%v: replay = %d after %v calls, want the replay after 1", fast, again.StatusCode, f.calls.Calls())
		}
		if n := apitest.Items(t, f.raw, f.tables[1]); n != 1 {
			t.Fatalf("fast=%v: %d orders, want 1", fast, n)
		}
	}
}

func TestPutOrderIsNaturallyIdempotent(t *testing.T) {
	f := newFixture(t)
	first := f.Send("PUT", "/orders/ord-client-1", "alice", "", tea)
	if first.StatusCode != 201 || orderID(t, first) != "ord-client-1" {
		t.Fatalf("first PUT = %d %s", first.StatusCode, first.Body)
	}
	same := f.Send("PUT", "/orders/ord-client-1", "alice", "", "{ \"note\": \"green\", \"items\": [ {\"quantity\": 2, \"sku\": \"tea\"} ] }")
	if same.StatusCode != 200 || orderID(t, same) != "ord-client-1" || !strings.Contains(same.Body, `"note":"green"`) {
		t.Fatalf("same PUT = %d %s, want 200 with the same order", same.StatusCode, same.Body)
	}
	other := f.Send("PUT", "/orders/ord-client-1", "alice", "", `{"items":[{"sku":"coffee","quantity":1}]}`)
	if other.StatusCode != 409 || apitest.ErrorCode(t, other) != "order_exists" {
		t.Fatalf("other PUT = %d %s, want 409 order_exists", other.StatusCode, other.Body)
	}
	// The same id in another scope is another order.
	if bobs := f.Send("PUT", "/orders/ord-client-1", "bob", "", `{"items":[{"sku":"coffee","quantity":1}]}`); bobs.StatusCode != 201 {
		t.Fatalf("bob's PUT = %d, want 201", bobs.StatusCode)
	}
	if n := apitest.Items(t, f.raw, f.tables[1]); n != 2 {
		t.Fatalf("%d orders, want alice's and bob's", n)
	}
}

func TestRacingPutsCreateOneOrder(t *testing.T) {
	f := newFixture(t)
	const n = 20
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = f.Send("PUT", "/orders/ord-race", "alice", "", tea).StatusCode
		}()
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case 201:
			created++
		case 200:
		default:
			t.Fatalf("statuses %v: want only 201 and 200", statuses)
		}
	}
	if created != 1 {
		t.Fatalf("%d PUTs created the order, want 1 (statuses %v)", created, statuses)
	}
}

func TestBadOrdersWriteNothing(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, method, path, sub, key, body string
		status                             int
		code                               string
	}{
		{"no items", "POST", "/orders", "alice", "k", `{"items":[]}`, 400, "invalid_request"},
		{"zero quantity", "POST", "/orders", "alice", "k", `{"items":[{"sku":"tea","quantity":0}]}`, 400, "invalid_request"},
		{"wrong type", "POST", "/orders", "alice", "k", `{"items":"tea"}`, 400, "invalid_request"},
		{"malformed", "POST", "/orders", "alice", "k", `{"items":[`, 400, "invalid_request"},
		{"missing key", "POST", "/orders", "alice", "", tea, 400, "idempotency_key_missing"},
		{"unauthenticated POST", "POST", "/orders", "", "k", tea, 401, "unauthenticated"},
		{"unauthenticated PUT", "PUT", "/orders/o1", "", "", tea, 401, "unauthenticated"},
		{"bad order id", "PUT", "/orders/o%231", "alice", "", tea, 400, "invalid_request"},
		{"PUT body over 64 KB", "PUT", "/orders/o1", "alice", "", `{"items":[{"sku":"tea","quantity":1}],"note":"` + strings.Repeat("x", 65<<10) + `"}`, 413, "body_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.Send(tc.method, tc.path, tc.sub, tc.key, tc.body)
			if resp.StatusCode != tc.status || apitest.ErrorCode(t, resp) != tc.code {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, resp.Body, tc.status, tc.code)
			}
			if n := apitest.Items(t, f.raw, f.tables...); n != 0 {
				t.Fatalf("%d items written", n)
			}
		})
	}
}

// TestABodyNotDeclaredJSONIsHeldToJSONsCanonicalForm: POST /orders reads
// every body as JSON, so one sent as text/plain with both "items" (tea)
// and "ITEMS" (coffee), which a first-wins reader and the parse step read
// differently, is refused before anything is written, the key unclaimed:
// the corrected request under the same key then creates the order.
func TestABodyNotDeclaredJSONIsHeldToJSONsCanonicalForm(t *testing.T) {
	f := newFixture(t)
	folded := `{"items":[{"sku":"tea","quantity":2}],"ITEMS":[{"sku":"coffee","quantity":9}]}`
	resp := f.Call(context.Background(), apitest.Request{Method: "POST", Path: "/orders", Sub: "alice", Key: "k-1", Body: folded, Header: map[string]string{"Content-Type": "text/plain"}})
	if resp.StatusCode != 400 || apitest.ErrorCode(t, resp) != "invalid_json" {
		t.Fatalf("got %d %s, want 400 invalid_json", resp.StatusCode, resp.Body)
	}
	if n := apitest.Items(t, f.raw, f.tables...); n != 0 {
		t.Fatalf("%d items written (an order or the key's record), want none", n)
	}
	if again := f.Send("POST", "/orders", "alice", "k-1", tea); again.StatusCode != 201 || apitest.Items(t, f.raw, f.tables[1]) != 1 {
		t.Fatalf("the corrected request under the same key: %d %s, want 201 and one order", again.StatusCode, again.Body)
	}
}

func TestTemplateRoutesAndTablesMatchTheCode(t *testing.T) {
	apitest.CheckRoutes(t, apitest.Function(t, "OrderFunction"), (&server{store: &idem.Store{}}).routes())
	apitest.CheckKeys(t, "OrdersTable", attrScope, attrOrderID)
}

// The same PUT is the same order however its path reaches the function: a
// trailing slash and a custom domain's API mapping ("/v1") change the raw
// path, not the route or the order id; and an absent note is an empty one.
func TestSamePutIsTheSameOrderWhateverThePath(t *testing.T) {
	f := newFixture(t)
	noNote := `{"items":[{"sku":"tea","quantity":2}]}`
	first := f.Send("PUT", "/orders/ord-p1", "alice", "", noNote)
	if first.StatusCode != 201 {
		t.Fatalf("first PUT = %d %s", first.StatusCode, first.Body)
	}
	for _, tc := range []struct{ raw, body string }{
		{"/orders/ord-p1/", noNote},
		{"/v1/orders/ord-p1", noNote},
		{"/orders/ord-p1", `{"items":[{"sku":"tea","quantity":2}],"note":""}`},
	} {
		again := f.Call(context.Background(), apitest.Request{Method: "PUT", Path: "/orders/ord-p1", RawPath: tc.raw, Sub: "alice", Body: tc.body})
		if again.StatusCode != 200 || orderID(t, again) != "ord-p1" {
			t.Errorf("PUT %s %s = %d %s, want 200 with the same order", tc.raw, tc.body, again.StatusCode, again.Body)
		}
	}
	if other := f.Call(context.Background(), apitest.Request{Method: "PUT", Path: "/orders/ord-p1", RawPath: "/v1/orders/ord-p1/", Sub: "alice", Body: `{"items":[{"sku":"tea","quantity":2}],"note":"x"}`}); other.StatusCode != 409 {
		t.Errorf("another note = %d, want 409", other.StatusCode)
	}
}

// A retried POST /orders under its key replays however its path reached
// the function. The fingerprint is pkg/idem's, from the matched route.
func TestRetriedPostReplaysWhateverThePath(t *testing.T) {
	f := newFixture(t)
	first := f.Send("POST", "/orders", "alice", "k-path", tea)
	for _, raw := range []string{"/orders/", "/v1/orders"} {
		again := f.Call(context.Background(), apitest.Request{Method: "POST", Path: "/orders", RawPath: raw, Sub: "alice", Key: "k-path", Body: tea})
		if again.StatusCode != 201 || again.Body != first.Body || again.Headers[idemlambda.HeaderReplayed] != "true" {
			t.Errorf("POST %s = %d %s, want the first order replayed", raw, again.StatusCode, again.Body)
		}
	}
}

// The function as its cold start makes it, from the environment the
// template gives it, checks the idempotency table and creates an order
// once per key.
func TestColdStartMakesAWorkingFunctionFromItsEnvironment(t *testing.T) {
	f := newFixture(t)
	for k, v := range map[string]string{
		"IDEMPOTENCY_TABLE": f.tables[0], "ORDERS_TABLE": f.tables[1], "ORDER_FAST_PATH": "false",
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
	} {
		t.Setenv(k, v)
	}
	s, err := newServer(context.Background(), nil, func(o *dynamodb.Options) { o.HTTPClient = calls })
	if err != nil {
		t.Fatal(err)
	}
	s.log = slog.New(slog.DiscardHandler)
	f.Handle = s.routes()
	first := f.Send("POST", "/orders", "alice", "k-1", tea)
	again := f.Send("POST", "/orders", "alice", "k-1", tea)
	if first.StatusCode != 201 || again.Body != first.Body || apitest.Items(t, f.raw, f.tables[1]) != 1 {
		t.Fatalf("first %d %s, again %d %s: want one order, replayed", first.StatusCode, first.Body, again.StatusCode, again.Body)
	}
}

// A commit that fails with no answer about the record (a network error
// after the SDK's retries) lapses the lease, keeping the key bound to its
// request: the answer says to retry, nothing is written, and the retry
// creates the order once.
func TestAFailedCommitLapsesTheKeyAndItsRetryCreatesOnce(t *testing.T) {
	f := newFixture(t)
	failed := false
	f.calls.Before = func(op string) error {
		if op == "TransactWriteItems" && !failed {
			failed = true
			return errors.New("connection reset by peer")
		}
		return nil
	}
	if first := f.Send("POST", "/orders", "alice", "k-1", tea); first.StatusCode < 500 || first.Headers["Retry-After"] == "" {
		t.Fatalf("first = %d %v %s, want a 5xx with Retry-After", first.StatusCode, first.Headers, first.Body)
	}
	if f.calls.Get("UpdateItem") == 0 || apitest.Items(t, f.raw, f.tables[1]) != 0 {
		t.Fatalf("calls %v, %d orders: want the lease lapsed and no order", f.calls.Calls(), apitest.Items(t, f.raw, f.tables[1]))
	}
	if retry := f.Send("POST", "/orders", "alice", "k-1", tea); retry.StatusCode != 201 || apitest.Items(t, f.raw, f.tables[1]) != 1 {
		t.Fatalf("retry = %d %s, want the one order created", retry.StatusCode, retry.Body)
	}
}

// A record deleted by hand under its holder (bypassing idemctl, which
// refuses a key in progress) fences the holder's commit: finding no
// record, the commit reads the key once, writes nothing and answers no
// success; the retry creates the order once.
func TestARecordDeletedUnderItsHolderFencesItsCommit(t *testing.T) {
	f := newFixture(t)
	f.calls.Before = func(op string) error {
		if op == "TransactWriteItems" {
			pk := map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: "5:alice:k-1"}}
			_, err := f.raw.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(f.tables[0]), Key: pk})
			return err
		}
		return nil
	}
	if first := f.Send("POST", "/orders", "alice", "k-1", tea); first.StatusCode < 400 || apitest.Items(t, f.raw, f.tables[1]) != 0 {
		t.Fatalf("first = %d %s, want no success and no order", first.StatusCode, first.Body)
	}
	if f.calls.Get("GetItem") != 1 {
		t.Fatalf("calls %v: want the one read of a commit that found no record", f.calls.Calls())
	}
	f.calls.Before = nil
	if retry := f.Send("POST", "/orders", "alice", "k-1", tea); retry.StatusCode != 201 || apitest.Items(t, f.raw, f.tables[1]) != 1 {
		t.Fatalf("retry = %d %s, want the one order created", retry.StatusCode, retry.Body)
	}
}
