package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// calls records the DynamoDB calls the function's code makes in these
// tests, which its role must grant exactly (apitest.Main).
var calls = &dynamotest.Actions{}

func TestMain(m *testing.M) { os.Exit(apitest.Main(m, "ChargeFunction", calls)) }

const secret = "sk_test_local"

type fixture struct {
	apitest.Caller
	raw      *dynamodb.Client // the test's own
	fn       *dynamodb.Client // the function's: its calls are recorded
	sim      *provider.Simulator
	server   *server
	tables   []string
	clock    *clock
	requests atomic.Int64 // requests the provider got
	api      string       // the provider's base URL
	body     string       // a request body, for tables of cases
	got      struct {     // the traceparent of each request the provider got
		sync.Mutex
		traceparents []string
	}
}

// clock is the one time of the store, the charge and the provider, moved
// by tests instead of sleeping.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newFixture(t *testing.T, storeOpts ...func(*idem.Options)) *fixture {
	t.Helper()
	db := dynamotest.Client(t)
	f := &fixture{raw: db, fn: dynamotest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = calls }), sim: provider.New(secret, nil), clock: &clock{t: time.Now()}}
	f.sim.SetClock(f.clock.now)
	// Search as PROVIDER_SIM_SEARCH says ("off", or a lag), else Stripe's
	// worst case, an hour behind: the charge must not depend on it.
	if err := f.sim.ConfigureSearch(""); err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		f.got.Lock()
		f.got.traceparents = append(f.got.traceparents, r.Header.Get("traceparent"))
		f.got.Unlock()
		f.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	f.api = api.URL
	idemTable := dynamotest.Table(t, db, "IdempotencyTable")
	charges := dynamotest.Table(t, db, "ChargesTable")
	attempts := dynamotest.Table(t, db, "AttemptsTable")
	f.tables = []string{idemTable, charges, attempts}
	store, err := idem.New(f.fn, idemTable, append([]func(*idem.Options){func(o *idem.Options) { o.Clock = f.clock.now }}, storeOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	payments := newStripePayments(api.URL, secret, log, nil)
	payments.keyInUse = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	f.server = &server{store: store, db: f.fn, table: charges, attempts: attempts, scopeClaim: "sub", log: log, now: f.clock.now, payments: payments}
	f.Caller = apitest.Caller{T: t, Routes: apitest.Function(t, "ChargeFunction").Routes, Handle: f.server.routes()}
	return f
}

func (f *fixture) call(method, path, sub, key, body string) events.APIGatewayV2HTTPResponse {
	f.T.Helper()
	return f.Send(method, path, sub, key, body)
}

// event is the payload 2.0 event Call would send.
func (f *fixture) event(method, path, sub, key, body string) events.APIGatewayV2HTTPRequest {
	f.T.Helper()
	r := httptest.NewRequest(method, "https://"+apitest.Host+path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	route, params, ok := apigw.Match(f.Routes, method, path)
	if !ok {
		f.T.Fatalf("no route for %s %s", method, path)
	}
	return apigw.Event(r, []byte(body), route, params, apitest.Claims(f.T, sub))
}

// charges counts the charge items, leaving out attempt markers.
func (f *fixture) charges() int {
	f.T.Helper()
	out, err := f.raw.Scan(context.Background(), &dynamodb.ScanInput{TableName: &f.tables[1], ConsistentRead: aws.Bool(true)})
	if err != nil {
		f.T.Fatal(err)
	}
	n := 0
	for _, item := range out.Items {
		if id, _ := item[attrChargeID].(*types.AttributeValueMemberS); id != nil && !strings.HasPrefix(id.Value, markerPrefix) {
			n++
		}
	}
	return n
}

func (f *fixture) items() int { return apitest.Items(f.T, f.raw, f.tables...) }

func errorCode(t *testing.T, resp events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	return apitest.ErrorCode(t, resp)
}

const visa = `{"amount":1050,"currency":"usd","payment_method":"pm_card_visa","description":"tea","metadata":{"order":"o-1"}}`

func TestChargeOnceAndReplay(t *testing.T) {
	f := newFixture(t)
	first := f.call("POST", "/charges", "alice", "k-1", visa)
	if first.StatusCode != 201 || first.Headers["Location"] == "" {
		t.Fatalf("first = %d %v %s", first.StatusCode, first.Headers, first.Body)
	}
	again := f.call("POST", "/charges", "alice", `"k-1"`, "{\n  \"currency\": \"usd\", \"amount\": 1050, \"payment_method\": \"pm_card_visa\", \"metadata\": {\"order\":\"o-1\"}, \"description\": \"tea\"}")
	if again.StatusCode != 201 || again.Body != first.Body || again.Headers["Location"] != first.Headers["Location"] {
		t.Fatalf("replay = %d %s, want the first response", again.StatusCode, again.Body)
	}
	if again.Headers[idemlambda.HeaderReplayed] != "true" || first.Headers[idemlambda.HeaderReplayed] != "" {
		t.Fatalf("Idempotent-Replayed: first %q, replay %q", first.Headers[idemlambda.HeaderReplayed], again.Headers[idemlambda.HeaderReplayed])
	}
	if n := len(f.sim.Effects()); n != 1 {
		t.Fatalf("provider charged %d times, want 1", n)
	}
	var ch charge
	if err := json.Unmarshal([]byte(first.Body), &ch); err != nil {
		t.Fatalf("first = %s: %v", first.Body, err)
	}
	got := f.call("GET", "/charges/"+ch.ID, "alice", "", "")
	if got.StatusCode != 200 || !strings.Contains(got.Body, `"amount":1050`) {
		t.Fatalf("GET = %d %s", got.StatusCode, got.Body)
	}
}

func TestDeclineIsStoredAndReplayedAs402(t *testing.T) {
	f := newFixture(t)
	body := `{"amount":500,"currency":"eur","payment_method":"` + provider.CardDeclined + `"}`
	first := f.call("POST", "/charges", "alice", "k-1", body)
	if first.StatusCode != 402 || errorCode(t, first) != "card_declined" {
		t.Fatalf("first = %d %s, want 402 card_declined", first.StatusCode, first.Body)
	}
	again := f.call("POST", "/charges", "alice", "k-1", body)
	if again.StatusCode != 402 || again.Body != first.Body || again.Headers[idemlambda.HeaderReplayed] != "true" {
		t.Fatalf("replay = %d %s", again.StatusCode, again.Body)
	}
	if n := len(f.sim.Effects()); n != 1 {
		t.Fatalf("provider attempted %d charges, want 1", n)
	}
}

func TestSameKeyOtherAmountIs422(t *testing.T) {
	f := newFixture(t)
	f.call("POST", "/charges", "alice", "k-1", visa)
	other := f.call("POST", "/charges", "alice", "k-1", strings.Replace(visa, "1050", "9999", 1))
	if other.StatusCode != 422 || errorCode(t, other) != "idempotency_key_reused" {
		t.Fatalf("got %d %s, want 422", other.StatusCode, other.Body)
	}
	if n := len(f.sim.Effects()); n != 1 {
		t.Fatalf("provider charged %d times, want 1", n)
	}
}

// A provider failure that saved nothing at the provider (a proxy's page,
// past the client's own two retries) lapses the lease: nothing is stored,
// the record stays bound to the request (another body under the key is
// refused), and the request's retry takes over at once. A saved 500 is
// settled instead (TestSaved500IsSettledWithoutASecondCharge).
func TestProviderFailureLapsesTheKey(t *testing.T) {
	f := newFixture(t)
	f.sim.Inject(provider.Fault{Kind: provider.NotJSON, Times: 3})
	failed := f.call("POST", "/charges", "alice", "k-1", visa)
	if failed.StatusCode != 502 || failed.Headers["Retry-After"] == "" || errorCode(t, failed) != "provider_misconfigured" {
		t.Fatalf("got %d %v %s, want 502 with Retry-After", failed.StatusCode, failed.Headers, failed.Body)
	}
	if n := f.charges(); n != 0 {
		t.Fatalf("a failed charge left %d charge items behind", n)
	}
	if other := f.call("POST", "/charges", "alice", "k-1", strings.Replace(visa, "1050", "9999", 1)); other.StatusCode != 422 {
		t.Fatalf("another body under the failed key = %d %s, want 422", other.StatusCode, other.Body)
	}
	retry := f.call("POST", "/charges", "alice", "k-1", visa)
	if retry.StatusCode != 201 || retry.Headers[idemlambda.HeaderReplayed] != "" {
		t.Fatalf("retry = %d %s, want a fresh 201", retry.StatusCode, retry.Body)
	}
	if n := len(f.sim.Effects()); n != 1 {
		t.Fatalf("provider charged %d times, want 1", n)
	}
}

func TestProviderSucceededButAnswerWasLost(t *testing.T) {
	f := newFixture(t)
	f.sim.Inject(provider.Fault{Kind: provider.DropAfterEffect})
	resp := f.call("POST", "/charges", "alice", "k-1", visa)
	if resp.StatusCode != 201 {
		t.Fatalf("got %d %s, want 201 once the client's retry is replayed by the provider", resp.StatusCode, resp.Body)
	}
	if n := len(f.sim.Effects()); n != 1 {
		t.Fatalf("provider charged %d times, want 1", n)
	}
}

// dead is a DynamoDB client whose process died after the claim: nothing
// after the first PutItem reaches the table, neither the commit nor the
// lapse.
type dead struct{ *dynamodb.Client }

func (d dead) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errors.New("killed")
}

func (d dead) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errors.New("killed")
}

func TestTakeoverAfterCrashChargesOnce(t *testing.T) {
	f := newFixture(t, func(o *idem.Options) { o.Lease = 5 * time.Second })
	crashed, err := idem.New(dead{f.fn}, f.tables[0], func(o *idem.Options) { o.Clock = f.clock.now; o.Lease = 5 * time.Second })
	if err != nil {
		t.Fatal(err)
	}
	healthy := f.server.store
	f.server.store = crashed
	f.Handle = f.server.routes()
	f.call("POST", "/charges", "alice", "k-1", visa) // charged at the provider, then died
	if n := len(f.sim.Effects()); n != 1 {
		t.Fatalf("provider effects after the crash = %d, want 1", n)
	}

	f.server.store = healthy
	f.Handle = f.server.routes()
	if busy := f.call("POST", "/charges", "alice", "k-1", visa); busy.StatusCode != 409 || busy.Headers["Retry-After"] == "" {
		t.Fatalf("retry within the lease = %d %v, want 409 with Retry-After", busy.StatusCode, busy.Headers)
	}
	f.clock.add(6 * time.Second)
	resp := f.call("POST", "/charges", "alice", "k-1", visa)
	if resp.StatusCode != 201 {
		t.Fatalf("takeover = %d %s", resp.StatusCode, resp.Body)
	}
	effects := f.sim.Effects()
	var ch charge
	if err := json.Unmarshal([]byte(resp.Body), &ch); err != nil {
		t.Fatalf("takeover = %s: %v", resp.Body, err)
	}
	if len(effects) != 1 || effects[0].PaymentIntentID != ch.ID {
		t.Fatalf("effects = %+v, charge %s: want the crashed attempt's one charge", effects, ch.ID)
	}
}

func TestBadRequestsWriteNothing(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, sub, key, body string
		status               int
		code                 string
	}{
		{"malformed JSON", "alice", "k", `{"amount":`, 400, "invalid_request"},
		{"wrong type", "alice", "k", `{"amount":"ten","currency":"usd","payment_method":"pm_card_visa"}`, 400, "invalid_request"},
		{"fractional amount", "alice", "k", `{"amount":10.5,"currency":"usd","payment_method":"pm_card_visa"}`, 400, "invalid_request"},
		{"zero amount", "alice", "k", `{"amount":0,"currency":"usd","payment_method":"pm_card_visa"}`, 400, "invalid_request"},
		{"negative amount", "alice", "k", `{"amount":-5,"currency":"usd","payment_method":"pm_card_visa"}`, 400, "invalid_request"},
		{"unknown currency", "alice", "k", `{"amount":5,"currency":"xyz","payment_method":"pm_card_visa"}`, 400, "invalid_request"},
		{"no payment source", "alice", "k", `{"amount":5,"currency":"usd"}`, 400, "invalid_request"},
		{"two payment sources", "alice", "k", `{"amount":5,"currency":"usd","payment_method":"pm_card_visa","customer":"cus_1"}`, 400, "invalid_request"},
		{"unknown field", "alice", "k", `{"amount":5,"currency":"usd","payment_method":"pm_card_visa","card_number":"4242"}`, 400, "invalid_request"},
		{"duplicate field", "alice", "k", `{"amount":500,"amount":700,"currency":"usd","payment_method":"pm_card_visa"}`, 400, "invalid_json"},
		{"duplicate field under another case", "alice", "k", `{"amount":5000,"currency":"usd","payment_method":"pm_card_visa","AMOUNT":60}`, 400, "invalid_json"},
		{"body over 64 KB", "alice", "k", `{"amount":5,"currency":"usd","payment_method":"pm_card_visa","description":"` + strings.Repeat("x", 65<<10) + `"}`, 413, "body_too_large"},
		{"key over 255", "alice", strings.Repeat("k", 256), visa, 400, "idempotency_key_invalid"},
		{"key with control character", "alice", "k\x01y", visa, 400, "idempotency_key_invalid"},
		{"missing key", "alice", "", visa, 400, "idempotency_key_missing"},
		{"unauthenticated", "", "k", visa, 401, "unauthenticated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.call("POST", "/charges", tc.sub, tc.key, tc.body)
			if resp.StatusCode != tc.status || errorCode(t, resp) != tc.code {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, resp.Body, tc.status, tc.code)
			}
			if n := f.items(); n != 0 {
				t.Fatalf("%d items written", n)
			}
			if n := len(f.sim.Effects()); n != 0 {
				t.Fatalf("provider called %d times", n)
			}
		})
	}
}

func TestChargesAreScopedToTheCaller(t *testing.T) {
	f := newFixture(t)
	created := f.Call(context.Background(), apitest.Request{Method: "POST", Path: "/charges", Sub: "alice", Key: "k-1", Body: visa, Header: map[string]string{"X-Scope": "bob", "X-Tenant-Id": "bob"}})
	var ch charge
	if err := json.Unmarshal([]byte(created.Body), &ch); err != nil {
		t.Fatalf("create = %s: %v", created.Body, err)
	}
	if got := f.call("GET", "/charges/"+ch.ID, "alice", "", ""); got.StatusCode != 200 {
		t.Fatalf("owner GET = %d", got.StatusCode)
	}
	for _, tc := range []struct{ sub, id string }{{"bob", ch.ID}, {"alice", "pi_missing"}} {
		got := f.call("GET", "/charges/"+tc.id, tc.sub, "", "")
		if got.StatusCode != 404 || errorCode(t, got) != "not_found" {
			t.Fatalf("GET %s as %s = %d %s, want 404", tc.id, tc.sub, got.StatusCode, got.Body)
		}
	}
	if got := f.call("GET", "/charges/"+ch.ID, "", "", ""); got.StatusCode != 401 {
		t.Fatalf("unauthenticated GET = %d, want 401", got.StatusCode)
	}
	// The same key from bob is bob's own operation, not alice's replay.
	bobs := f.call("POST", "/charges", "bob", "k-1", visa)
	if bobs.StatusCode != 201 || bobs.Headers[idemlambda.HeaderReplayed] != "" || bobs.Body == created.Body {
		t.Fatalf("bob's charge = %d %v, want a charge of his own", bobs.StatusCode, bobs.Headers)
	}
}

func TestTemplateRoutesAndTablesMatchTheCode(t *testing.T) {
	apitest.CheckRoutes(t, apitest.Function(t, "ChargeFunction"), (&server{store: &idem.Store{}}).routes())
	apitest.CheckKeys(t, "ChargesTable", attrScope, attrChargeID)
	apitest.CheckKeys(t, "AttemptsTable", attrScope, attrChargeID)
}

// The function as its cold start makes it, from the environment the
// template gives it (the secret key set, as under sam local), checks the
// idempotency table and charges once per key.
func TestColdStartMakesAWorkingFunctionFromItsEnvironment(t *testing.T) {
	f := newFixture(t)
	for k, v := range map[string]string{
		"IDEMPOTENCY_TABLE": f.tables[0], "CHARGES_TABLE": f.tables[1], "ATTEMPTS_TABLE": f.tables[2],
		"PROVIDER_BASE_URL": "https://api.stripe.com", "PROVIDER_LOCAL_URL": f.api, "PROVIDER_SECRET_KEY": secret,
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
	first := f.call("POST", "/charges", "alice", "k-1", visa)
	again := f.call("POST", "/charges", "alice", "k-1", visa)
	if first.StatusCode != 201 || again.Body != first.Body || len(f.sim.Effects()) != 1 {
		t.Fatalf("first %d %s, again %d %s, %d effects: want one charge, replayed", first.StatusCode, first.Body, again.StatusCode, again.Body, len(f.sim.Effects()))
	}
}

// The secret key goes with every provider request, so the cold start
// refuses a provider reached in the clear: PROVIDER_BASE_URL is an
// https:// URL. Only a local run (a local DynamoDB engine named by
// DYNAMODB_ENDPOINT) reaches the simulator over plain HTTP, and through a
// variable of its own, PROVIDER_LOCAL_URL, which a deployed function
// refuses.
func TestTheProviderIsReachedOverTLSOutsideALocalRun(t *testing.T) {
	f := newFixture(t)
	engine := os.Getenv("DYNAMODB_ENDPOINT")
	for _, tc := range []struct {
		name, base, local, engine, refusal string
	}{
		{"https", "https://api.stripe.com", "", engine, ""},
		{"plain http", "http://api.stripe.com", "", engine, "https"},
		{"plain http on loopback", f.api, "", engine, "https"},
		{"no scheme", "api.stripe.com", "", engine, "https"},
		{"no host", "https://", "", engine, "https"},
		{"the simulator in a local run", "https://api.stripe.com", f.api, engine, ""},
		{"the local variable with no local engine", "https://api.stripe.com", f.api, "", "PROVIDER_LOCAL_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range map[string]string{
				"IDEMPOTENCY_TABLE": f.tables[0], "CHARGES_TABLE": f.tables[1], "ATTEMPTS_TABLE": f.tables[2],
				"PROVIDER_BASE_URL": tc.base, "PROVIDER_LOCAL_URL": tc.local, "PROVIDER_SECRET_KEY": secret, "DYNAMODB_ENDPOINT": tc.engine,
				"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
			} {
				t.Setenv(k, v)
			}
			endpoint := func(o *dynamodb.Options) { o.HTTPClient, o.BaseEndpoint = calls, aws.String(engine) }
			_, err := newServer(context.Background(), nil, endpoint)
			switch {
			case tc.refusal == "" && err != nil:
				t.Fatalf("cold start: %v, want it to start", err)
			case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
				t.Fatalf("cold start: %v, want it refused naming %s", err, tc.refusal)
			}
		})
	}
}

// The provider's secret key is read at cold start from an SSM parameter,
// which must be a SecureString: a String or StringList parameter keeps the
// key unencrypted, readable by whoever may describe parameters, and the
// function refuses to start on one, saying so.
func TestTheProviderSecretMustBeASecureString(t *testing.T) {
	f := newFixture(t)
	var kind atomic.Value
	var asked atomic.Value
	ssm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		asked.Store(r.Header.Get("X-Amz-Target") + " " + string(b))
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		fmt.Fprintf(w, `{"Parameter":{"Name":"/idem/provider-secret-key","Type":%q,"Value":%q,"Version":1}}`, kind.Load(), secret)
	}))
	defer ssm.Close()
	for _, tc := range []struct {
		kind string
		ok   bool
	}{{"SecureString", true}, {"String", false}, {"StringList", false}} {
		t.Run(tc.kind, func(t *testing.T) {
			kind.Store(tc.kind)
			for k, v := range map[string]string{
				"IDEMPOTENCY_TABLE": f.tables[0], "CHARGES_TABLE": f.tables[1], "ATTEMPTS_TABLE": f.tables[2],
				"PROVIDER_BASE_URL": "https://api.stripe.com", "PROVIDER_LOCAL_URL": f.api,
				"PROVIDER_SECRET_KEY": "", "PROVIDER_SECRET_PARAMETER": "/idem/provider-secret-key", "AWS_ENDPOINT_URL_SSM": ssm.URL,
				"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
			} {
				t.Setenv(k, v)
			}
			_, err := newServer(context.Background(), nil, func(o *dynamodb.Options) { o.HTTPClient = calls })
			if got, _ := asked.Load().(string); !strings.HasPrefix(got, "AmazonSSM.GetParameter ") || !strings.Contains(got, `"WithDecryption":true`) {
				t.Fatalf("SSM was asked %q, want GetParameter with decryption", got)
			}
			switch {
			case tc.ok && err != nil:
				t.Fatalf("cold start on a SecureString: %v", err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "SecureString") || !strings.Contains(err.Error(), tc.kind)):
				t.Fatalf("cold start on a %s: %v, want it refused naming SecureString and the type", tc.kind, err)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Fatalf("the refusal carries the secret: %v", err)
			}
		})
	}
}
