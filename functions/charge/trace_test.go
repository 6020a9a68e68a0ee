package main

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/local/provider"
)

// tracedServer is the function as its cold start makes it from the
// environment, traced into memory, its handler the one lambda.Start runs.
func tracedServer(t *testing.T) (*fixture, *tracetest.SpanRecorder) {
	t.Helper()
	f := newFixture(t)
	for k, v := range map[string]string{
		"IDEMPOTENCY_TABLE": f.tables[0], "CHARGES_TABLE": f.tables[1], "ATTEMPTS_TABLE": f.tables[2],
		"PROVIDER_BASE_URL": "https://api.stripe.com", "PROVIDER_LOCAL_URL": f.api, "PROVIDER_SECRET_KEY": secret,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
	} {
		t.Setenv(k, v)
	}
	tr, rec := apitest.Traced()
	s, err := newServer(context.Background(), tr, func(o *dynamodb.Options) { o.HTTPClient = calls })
	if err != nil {
		t.Fatal(err)
	}
	s.log = slog.New(slog.DiscardHandler)
	f.Handler = s.handler(tr)
	return f, rec
}

// A charge is one trace: the invocation's span, the Store's under it, and
// under that every DynamoDB call (the claim, the attempt marker, the
// commit) and every request to the provider, whose traceparent went out
// with it; its replay is a trace of its own, the Store's span replayed
// from the one DynamoDB call of its lost claim. No span carries the key,
// the scope, the body or the provider's secret key.
func TestAChargeAndItsReplayAreEachOneTrace(t *testing.T) {
	f, rec := tracedServer(t)
	const scope, key = "tenant-SECRET-scope", "key-SECRET-0001"
	body := strings.Replace(visa, `"tea"`, `"SECRET-description"`, 1)
	first := f.call("POST", "/charges", scope, key, body)
	again := f.call("POST", "/charges", scope, key, body)
	if first.StatusCode != 201 || again.Body != first.Body {
		t.Fatalf("first %d %s, again %d %s: want a charge and its replay", first.StatusCode, first.Body, again.StatusCode, again.Body)
	}
	spans := apitest.Spans(rec.Ended())
	if n := len(spans.Roots("DynamoDB.DescribeTable")); n != 1 {
		t.Errorf("%d cold start DescribeTable traces, want the one of CheckSingleRegion", n)
	}
	roots := spans.Roots("POST /charges")
	if len(roots) != 2 {
		t.Fatalf("%d traces of POST /charges, want the charge's and the replay's: %v", len(roots), spans.Names())
	}
	charge, replay := roots[0], roots[1]
	if charge.SpanKind() != trace.SpanKindServer || apitest.Attr(charge, "http.route") != "/charges" || apitest.Attr(charge, "http.response.status_code") != "201" ||
		apitest.Attr(charge, "faas.coldstart") != "true" || apitest.Attr(replay, "faas.coldstart") != "false" {
		t.Errorf("invocation spans %v and %v: want server spans of /charges answering 201, the first a cold start", charge.Attributes(), replay.Attributes())
	}
	store := spans.Children(charge)
	if len(store) != 1 || store[0].Name() != "idem.Do" || apitest.Attr(store[0], "idem.outcome") != "executed" {
		t.Fatalf("the charge's trace:\n%s want the Store's executed span under the invocation's", spans.Tree(charge))
	}
	calls := spans.Children(store[0])
	want := []string{"DynamoDB.PutItem", "DynamoDB.GetItem", "HTTP GET", "DynamoDB.PutItem", "HTTP POST", "DynamoDB.TransactWriteItems"}
	if !slices.Equal(calls.Names(), want) || len(spans.Trace(charge)) != 2+len(want) {
		t.Errorf("the charge's trace:\n%s want under the Store's span the claim, the attempt marker's read, the payment method, the marker, the intent and the commit: %v", spans.Tree(charge), want)
	}
	if got := apitest.Attr(calls[0], "aws.dynamodb.table_names"); got != "["+strconv.Quote(f.tables[0])+"]" {
		t.Errorf("the first call's table %s, want the claim's, on %s", got, f.tables[0])
	}
	f.got.Lock()
	sent := f.got.traceparents
	f.got.Unlock()
	for _, c := range calls {
		if strings.HasPrefix(c.Name(), "HTTP ") && !slices.Contains(sent, traceparent(c.SpanContext())) {
			t.Errorf("the provider got traceparents %v, none naming the span of %s %s", sent, c.Name(), apitest.Attr(c, "url.full"))
		}
	}
	replayed := spans.Children(replay)
	if len(replayed) != 1 || apitest.Attr(replayed[0], "idem.outcome") != "replayed" || !slices.Equal(apitest.Events(replayed[0]), []string{"idem.claim idem.result=lost idem.attempt=1"}) {
		t.Fatalf("the replay's trace:\n%s want the Store's span replayed from its lost claim", spans.Tree(replay))
	}
	if claim := spans.Children(replayed[0]); len(claim) != 1 || claim[0].Name() != "DynamoDB.PutItem" || claim[0].Status().Code != codes.Error {
		t.Errorf("the replay's trace:\n%s want one DynamoDB call, the claim that lost", spans.Tree(replay))
	}
	spans.CheckNoSecret(t, scope, key, "SECRET", secret, downstreamKey(scope, key, 0))
}

// A request the door refuses before any call (no Idempotency-Key) is an
// idem.refused event on its invocation's span, with the refusal's code and
// status alone, and no Store span.
func TestARefusedRequestIsAnEventOnItsInvocationsSpan(t *testing.T) {
	f, rec := tracedServer(t)
	if resp := f.call("POST", "/charges", "tenant-SECRET-scope", "", visa); resp.StatusCode != 400 {
		t.Fatalf("no key: %d %s, want 400", resp.StatusCode, resp.Body)
	}
	spans := apitest.Spans(rec.Ended())
	roots := spans.Roots("POST /charges")
	if len(roots) != 1 || len(spans.Children(roots[0])) != 0 || apitest.Attr(roots[0], "http.response.status_code") != "400" {
		t.Fatalf("spans %v, want the invocation's alone, answering 400", spans.Names())
	}
	if ev := apitest.Events(roots[0]); len(ev) != 1 || !strings.HasPrefix(ev[0], "idem.refused ") || !strings.Contains(ev[0], "idem.status_code=400") {
		t.Errorf("the invocation's events %v, want idem.refused with its code and status", ev)
	}
	spans.CheckNoSecret(t, "SECRET")
}

// traceparent is the W3C header naming sc.
func traceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// The provider's spans name its routes, never its objects: a charge of a
// saved customer reads the customer (/v1/customers/cus_…), and its retry
// after a saved 500 lists the customer's intents (?customer=cus_…), yet no
// span of either holds the customer, its payment method or an intent id.
func TestProviderSpansCarryRoutesNotIds(t *testing.T) {
	f, rec := tracedServer(t)
	f.sim.AddCustomer("cus_SECRETcustomer", map[string]string{MetaScope: "alice"}, "pm_SECRETmethod")
	f.sim.AddPaymentMethod("pm_SECRETmethod", "cus_SECRETcustomer", provider.CardVisa)
	f.sim.Inject(provider.Fault{Kind: provider.FailAfterEffect})
	body := `{"amount":1050,"currency":"usd","customer":"cus_SECRETcustomer"}`
	if first := f.call("POST", "/charges", "alice", "k-1", body); first.StatusCode != 503 {
		t.Fatalf("first = %d %s, want the saved 500's 503", first.StatusCode, first.Body)
	}
	again := f.call("POST", "/charges", "alice", "k-1", body)
	if again.StatusCode != 201 {
		t.Fatalf("retry = %d %s, want the settled 201", again.StatusCode, again.Body)
	}
	spans := apitest.Spans(rec.Ended())
	var routes []string
	for _, sp := range spans {
		if strings.HasPrefix(sp.Name(), "HTTP ") {
			routes = append(routes, sp.Name()+" "+strings.TrimPrefix(apitest.Attr(sp, "url.full"), f.api))
		}
	}
	slices.Sort(routes)
	want := []string{"HTTP GET /v1/customers/{id}", "HTTP GET /v1/payment_intents", "HTTP POST /v1/payment_intents"}
	if !slices.Equal(routes, want) {
		t.Errorf("the provider's spans %q, want the routes %q", routes, want)
	}
	spans.CheckNoSecret(t, "SECRET", charged(t, again).ID)
}
