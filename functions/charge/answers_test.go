package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stripe/stripe-go/v82"

	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

func charged(t *testing.T, resp events.APIGatewayV2HTTPResponse) charge {
	t.Helper()
	var ch charge
	if err := json.Unmarshal([]byte(resp.Body), &ch); err != nil {
		t.Fatalf("%s: %v", resp.Body, err)
	}
	return ch
}

func body(pm string) string {
	return `{"amount":1050,"currency":"usd","payment_method":"` + pm + `"}`
}

// Another tenant's customer or saved payment method is refused with the
// same answer as one that does not exist, and nothing is charged.
func TestChargeOnlyYourOwnPaymentObjects(t *testing.T) {
	f := newFixture(t)
	for _, tenant := range []string{"alice", "bob"} {
		f.sim.AddCustomer("cus_"+tenant, map[string]string{MetaScope: tenant}, "pm_"+tenant)
		f.sim.AddPaymentMethod("pm_"+tenant, "cus_"+tenant, provider.CardVisa)
	}
	f.sim.AddCustomer("cus_nopm", map[string]string{MetaScope: "alice"}, "")
	var refusals []string
	for i, b := range []string{
		`{"amount":1050,"currency":"usd","customer":"cus_bob"}`,
		`{"amount":1050,"currency":"usd","customer":"cus_nobody"}`,
		body("pm_bob"),
		body("pm_nobody"),
	} {
		resp := f.call("POST", "/charges", "alice", "k-"+string(rune('a'+i)), b)
		if resp.StatusCode != 400 || errorCode(t, resp) != "payment_source_unknown" {
			t.Fatalf("%s: %d %s, want 400 payment_source_unknown", b, resp.StatusCode, resp.Body)
		}
		refusals = append(refusals, resp.Body)
	}
	if refusals[0] != refusals[1] || refusals[2] != refusals[3] || refusals[0] != refusals[2] {
		t.Fatalf("foreign and unknown objects answered differently: %q", refusals)
	}
	if n := len(f.sim.Effects()); n != 0 {
		t.Fatalf("%d charges made for refused objects", n)
	}
	if r := f.call("POST", "/charges", "alice", "k-nopm", `{"amount":1050,"currency":"usd","customer":"cus_nopm"}`); r.StatusCode != 400 || errorCode(t, r) != "payment_method_required" {
		t.Fatalf("customer without a default method: %d %s", r.StatusCode, r.Body)
	}
	for i, b := range []string{`{"amount":1050,"currency":"usd","customer":"cus_alice"}`, body("pm_alice"), body(provider.CardVisa)} {
		if r := f.call("POST", "/charges", "alice", "own-"+strconv.Itoa(i), b); r.StatusCode != 201 {
			t.Fatalf("alice's own %s: %d %s", b, r.StatusCode, r.Body)
		}
	}
	effects := f.sim.Effects()
	if len(effects) != 3 || effects[0].Customer != "cus_alice" || effects[1].Customer != "cus_alice" || effects[2].Customer != "" {
		t.Fatalf("effects %+v: want alice's customer twice, then an unattached card", effects)
	}
}

// A 500 is saved under the provider's key: a retry under it would get the
// 500 for as long as the provider keeps the key, then charge again once it
// is pruned. The charge settles instead: it lists the intents since the
// attempt, finds the one whose metadata names the operation, and creates
// under the next key only where none exists, unknownSettle after the 500.
func TestSaved500IsSettledWithoutASecondCharge(t *testing.T) {
	for _, tc := range []struct {
		kind    provider.FaultKind
		effects int // made by the faulted request
		soon    int // the retry's answer within unknownSettle
	}{{provider.FailBeforeEffect, 0, 503}, {provider.FailAfterEffect, 1, 201}} {
		t.Run(string(tc.kind), func(t *testing.T) {
			f := newFixture(t)
			f.sim.Inject(provider.Fault{Kind: tc.kind})
			before := f.requests.Load()
			first := f.call("POST", "/charges", "alice", "k-1", visa)
			if n := f.requests.Load() - before; n != 2 {
				// stripe-go does not retry a 500 that carries an error
				// object: the payment method's lookup, then one create.
				t.Fatalf("%d provider requests, want 2", n)
			}
			if first.StatusCode != 503 || errorCode(t, first) != "provider_outcome_unknown" || first.Headers["Retry-After"] == "" {
				t.Fatalf("first = %d %v %s, want 503 provider_outcome_unknown with Retry-After", first.StatusCode, first.Headers, first.Body)
			}
			// The list is consistent after the write: a charge the 500 made
			// is found at once; none found is trusted only unknownSettle on.
			soon := f.call("POST", "/charges", "alice", "k-1", visa)
			if soon.StatusCode != tc.soon || tc.soon == 503 && errorCode(t, soon) != "provider_outcome_unknown" {
				t.Fatalf("retry within unknownSettle = %d %s, want %d", soon.StatusCode, soon.Body, tc.soon)
			}
			if n := len(f.sim.Effects()); n != tc.effects {
				t.Fatalf("%d effects before settlement, want %d", n, tc.effects)
			}
			f.clock.add(unknownSettle)
			settled := f.call("POST", "/charges", "alice", "k-1", visa)
			effects := f.sim.Effects()
			if settled.StatusCode != 201 || len(effects) != 1 || charged(t, settled).ID != effects[0].PaymentIntentID {
				t.Fatalf("settled = %d %s with effects %+v: want 201 and one charge", settled.StatusCode, settled.Body, effects)
			}
			f.clock.add(provider.KeyRetention - time.Hour) // the provider forgot the first key; our record holds
			if again := f.call("POST", "/charges", "alice", "k-1", visa); again.Body != settled.Body || again.Headers[idemlambda.HeaderReplayed] != "true" {
				t.Fatalf("replay = %d %s", again.StatusCode, again.Body)
			}
			if n := len(f.sim.Effects()); n != 1 {
				t.Fatalf("%d charges, want 1", n)
			}
		})
	}
}

// A saved 500 after a declined confirmation settles as the decline.
func TestSaved500OverADeclineSettlesAsTheDecline(t *testing.T) {
	f := newFixture(t)
	f.sim.Inject(provider.Fault{Kind: provider.FailAfterEffect})
	declined := body(provider.CardInsufficientFunds)
	if first := f.call("POST", "/charges", "alice", "k-1", declined); first.StatusCode != 503 {
		t.Fatalf("first = %d %s, want 503", first.StatusCode, first.Body)
	}
	f.clock.add(unknownSettle)
	settled := f.call("POST", "/charges", "alice", "k-1", declined)
	effects := f.sim.Effects()
	if settled.StatusCode != 402 || !strings.Contains(settled.Body, `"decline_code":"insufficient_funds"`) || len(effects) != 1 || !strings.Contains(settled.Body, effects[0].PaymentIntentID) {
		t.Fatalf("settled = %d %s, effects %+v: want the first attempt's decline", settled.StatusCode, settled.Body, effects)
	}
}

// A takeover after the provider pruned its key (leases renew the record,
// so an operation can outlive the provider's key) finds the first charge
// by its metadata instead of making a second.
func TestRetryAfterTheProviderForgotItsKeyFindsTheCharge(t *testing.T) {
	// With the shortest TTL the record has expired by then and the retry
	// claims afresh; with the longest it takes the lapsed lease over.
	for _, ttl := range []time.Duration{idem.MinTTL, idem.MaxTTL} {
		t.Run(ttl.String(), func(t *testing.T) {
			opts := func(o *idem.Options) { o.Lease, o.TTL = 5*time.Second, ttl }
			f := newFixture(t, opts)
			crashed, err := idem.New(dead{f.fn}, f.tables[0], opts, func(o *idem.Options) { o.Clock = f.clock.now })
			if err != nil {
				t.Fatal(err)
			}
			healthy := f.server.store
			f.server.store = crashed
			f.Handle = f.server.routes()
			f.call("POST", "/charges", "alice", "k-1", visa) // charged, then died before the commit
			f.server.store = healthy
			f.Handle = f.server.routes()
			f.clock.add(provider.KeyRetention + time.Hour)
			resp := f.call("POST", "/charges", "alice", "k-1", visa)
			effects := f.sim.Effects()
			if resp.StatusCode != 201 || len(effects) != 1 || charged(t, resp).ID != effects[0].PaymentIntentID {
				t.Fatalf("retry a day later = %d %s, effects %+v: want the first charge", resp.StatusCode, resp.Body, effects)
			}
		})
	}
}

// requires_action and processing are not final: answered 202 with the
// status as it is, stored and replayed as such; an off-session card that
// needs authentication is a decline.
func TestStatusesThatAreNotFinalAreStoredAsWhatTheyAre(t *testing.T) {
	f := newFixture(t)
	f.sim.AddCustomer("cus_alice", map[string]string{MetaScope: "alice"}, "pm_3ds")
	f.sim.AddPaymentMethod("pm_3ds", "cus_alice", provider.CardThreeDSRequired)
	for _, tc := range []struct {
		body, status string
		code         int
	}{
		{body(provider.CardThreeDSRequired), "requires_action", 202},
		{body(provider.Processing), "processing", 202},
		{body(provider.CardVisa), "succeeded", 201},
		{`{"amount":1050,"currency":"usd","customer":"cus_alice"}`, "declined", 402},
	} {
		first := f.call("POST", "/charges", "alice", tc.status, tc.body)
		again := f.call("POST", "/charges", "alice", tc.status, tc.body)
		got := "declined" // a decline is problem details, not a charge
		if tc.code != 402 {
			got = charged(t, first).Status
		}
		if first.StatusCode != tc.code || got != tc.status || again.Body != first.Body || again.Headers[idemlambda.HeaderReplayed] != "true" {
			t.Errorf("%s: %d %s then %d, want %d %s, replayed", tc.status, first.StatusCode, first.Body, again.StatusCode, tc.code, tc.status)
		}
	}
	if r := f.call("POST", "/charges", "alice", "requires_action", body(provider.CardThreeDSRequired)); !strings.Contains(r.Body, `"next_action":"use_stripe_sdk"`) {
		t.Errorf("requires_action without its next action: %s", r.Body)
	}
}

// Declines keep what the provider said: the decline_code where it gives
// one, else the error's own code (expired_card, incorrect_cvc).
func TestDeclineDetailsAreKept(t *testing.T) {
	f := newFixture(t)
	for pm, want := range map[string]string{
		provider.CardDeclined: "generic_decline", provider.CardInsufficientFunds: "insufficient_funds",
		provider.CardExpired: "expired_card", provider.CardIncorrectCVC: "incorrect_cvc", provider.CardProcessingError: "processing_error",
	} {
		resp := f.call("POST", "/charges", "alice", pm, body(pm))
		var e struct {
			Code        string `json:"code"`
			DeclineCode string `json:"decline_code"`
			ChargeID    string `json:"charge_id"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &e); err != nil || resp.StatusCode != 402 || e.Code != "card_declined" || e.DeclineCode != want || e.ChargeID == "" {
			t.Errorf("%s: %d %s, want 402 with decline_code %s", pm, resp.StatusCode, resp.Body, want)
			continue
		}
		got := f.call("GET", "/charges/"+e.ChargeID, "alice", "", "")
		if ch := charged(t, got); ch.Status != "declined" || ch.DeclineCode != want {
			t.Errorf("%s: stored %s", pm, got.Body)
		}
	}
}

// Every kind of provider answer, and whether the charge stores it (a retry
// replays it) or answers 5xx and lets the retry ask again.
func TestEveryProviderAnswerIsClassified(t *testing.T) {
	declined := body(provider.CardDeclined)
	for _, tc := range []struct {
		name   string
		setup  func(f *fixture)
		status int
		code   string
		stored bool
	}{
		{"succeeded", func(f *fixture) {}, 201, "", true},
		{"declined", func(f *fixture) { f.body = declined }, 402, "card_declined", true},
		{"invalid request (400)", func(f *fixture) { f.sim.Inject(provider.Fault{Kind: provider.FailBeforeEffect, Status: 400}) }, 400, "provider_rejected", true},
		{"500 saved by the provider", func(f *fixture) { f.sim.Inject(provider.Fault{Kind: provider.FailBeforeEffect}) }, 503, "provider_outcome_unknown", false},
		{"key in use past the waits", func(f *fixture) { f.sim.Inject(provider.Fault{Kind: provider.KeyInUse, Times: 4}) }, 503, "provider_busy", false},
		{"rate limited", func(f *fixture) { f.sim.Inject(provider.Fault{Kind: provider.FailBeforeEffect, Status: 429}) }, 503, "provider_busy", false},
		{"a proxy's HTML 403", func(f *fixture) { f.sim.Inject(provider.Fault{Kind: provider.NotJSON, Times: 3}) }, 502, "provider_misconfigured", false},
		{"wrong secret (401)", func(f *fixture) {
			f.server.payments = newStripePayments(f.api, "sk_wrong", f.server.log, nil)
		}, 502, "provider_misconfigured", false},
		{"wrong URL (404 with an error object)", func(f *fixture) {
			// Reads reach the provider; the create meets a 404, as a
			// base URL of some other Stripe-like service would give.
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					w.WriteHeader(http.StatusNotFound)
					_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"Unrecognized request URL (POST: /v1/payment_intents)."}}`)) // the client reads what was written: a failed write fails its assertion
					return
				}
				f.sim.ServeHTTP(w, r)
			}))
			f.T.Cleanup(other.Close)
			f.server.payments = newStripePayments(other.URL, secret, f.server.log, nil)
		}, 502, "provider_misconfigured", false},
		{"no answer in time", func(f *fixture) {
			f.server.payments = newStripeClient(f.api, secret, f.server.log, nil, 50*time.Millisecond)
			f.sim.Inject(provider.Fault{Kind: provider.Delay, Delay: time.Second, Times: 3})
		}, 503, "provider_timeout", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			healthy := f.server.payments
			f.body = visa
			tc.setup(f)
			f.Handle = f.server.routes()
			first := f.call("POST", "/charges", "alice", "k", f.body)
			if first.StatusCode != tc.status || (tc.code != "" && errorCode(t, first) != tc.code) {
				t.Fatalf("got %d %s, want %d %s", first.StatusCode, first.Body, tc.status, tc.code)
			}
			f.server.payments = healthy
			f.Handle = f.server.routes()
			again := f.call("POST", "/charges", "alice", "k", f.body)
			if replayed := again.Headers[idemlambda.HeaderReplayed] == "true"; replayed != tc.stored {
				t.Fatalf("retry: %d %s replayed=%v, want stored=%v", again.StatusCode, again.Body, replayed, tc.stored)
			}
		})
	}
}

// A 409 "key in use" is waited out and the call made again, a bounded
// number of times: the other request's result is then replayed.
func TestKeyInUseIsWaitedOutABoundedNumberOfTimes(t *testing.T) {
	f := newFixture(t)
	f.sim.Inject(provider.Fault{Kind: provider.KeyInUse, Times: 2})
	before := f.requests.Load()
	if r := f.call("POST", "/charges", "alice", "k-1", visa); r.StatusCode != 201 {
		t.Fatalf("got %d %s, want 201 after two waits", r.StatusCode, r.Body)
	}
	if n := f.requests.Load() - before; n != 4 { // the payment method, then three creates
		t.Fatalf("%d provider requests, want 4", n)
	}
	f.sim.Inject(provider.Fault{Kind: provider.KeyInUse, Times: 100})
	before = f.requests.Load()
	if r := f.call("POST", "/charges", "alice", "k-2", visa); r.StatusCode != 503 || errorCode(t, r) != "provider_busy" {
		t.Fatalf("got %d %s, want 503 provider_busy", r.StatusCode, r.Body)
	}
	if n := f.requests.Load() - before; n != 1+int64(len(keyInUseBackoff))+1 {
		t.Fatalf("%d provider requests, want the lookup and %d creates", n, len(keyInUseBackoff)+1)
	}
}

// An operation abandoned after its provider call (the client never came
// back) leaves its marker. Once its record expired, the key may be reused
// for another request: a new operation, charged under the next downstream
// key, so the provider does not refuse it as another request under a key.
func TestReusedKeyAfterAnAbandonedOperationIsANewOne(t *testing.T) {
	f := newFixture(t)
	f.sim.SetKeyRetention(3 * provider.KeyRetention) // "at least" 24 hours
	crashed, err := idem.New(dead{f.fn}, f.tables[0], func(o *idem.Options) { o.Clock = f.clock.now })
	if err != nil {
		t.Fatal(err)
	}
	healthy := f.server.store
	f.server.store = crashed
	f.Handle = f.server.routes()
	f.call("POST", "/charges", "alice", "k-1", visa) // charged, then died
	f.server.store = healthy
	f.Handle = f.server.routes()
	f.clock.add(idem.MinTTL + time.Hour) // the record expired; the provider still may keep its key
	other := strings.Replace(visa, "1050", "2000", 1)
	resp := f.call("POST", "/charges", "alice", "k-1", other)
	effects := f.sim.Effects()
	if resp.StatusCode != 201 || len(effects) != 2 || !strings.HasSuffix(effects[1].IdempotencyKey, "-1") || effects[1].Amount != 2000 {
		t.Fatalf("reused key = %d %s, effects %+v: want a new charge under the next key", resp.StatusCode, resp.Body, effects)
	}
}

// A 202 requires_action carries the client secret the customer's client
// finishes 3-D Secure with (it is never kept in the charge record), and
// GET /charges/{id} reads a status that is not final again from the
// provider (at most once per refreshEvery, the create's answer counting as
// a read): once authenticated, or once an asynchronous payment settled or
// failed, the charge says so, and keeps saying so. A final status is never
// read again.
func TestNotFinalChargesCarryTheClientSecretAndGetRefreshesThem(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		pm            string
		succeed       bool
		before, after string
	}{
		{provider.CardThreeDSRequired, true, "requires_action", "succeeded"},
		{provider.CardThreeDSRequired, false, "requires_action", "declined"},
		{provider.Processing, true, "processing", "succeeded"},
		{provider.Processing, false, "processing", "declined"},
	} {
		name := tc.pm + " " + tc.after
		first := f.call("POST", "/charges", "alice", name, body(tc.pm))
		ch := charged(t, first)
		effects := f.sim.Effects()
		id := effects[len(effects)-1].PaymentIntentID
		wantSecret := tc.before == "requires_action"
		if first.StatusCode != 202 || ch.Status != tc.before || (ch.ClientSecret != "") != wantSecret || wantSecret && !strings.HasPrefix(ch.ClientSecret, id+"_secret_") {
			t.Fatalf("%s: %d %s, want 202 %s with the client secret=%v", name, first.StatusCode, first.Body, tc.before, wantSecret)
		}
		// Within refreshEvery of the create's own read, from the record
		// alone: no client secret, which the POST's answer carries.
		before := f.requests.Load()
		if got := charged(t, f.call("GET", "/charges/"+ch.ID, "alice", "", "")); got.Status != tc.before || got.ClientSecret != "" || f.requests.Load() != before {
			t.Fatalf("%s: GET at once = %+v after %d provider requests, want %s from the record alone", name, got, f.requests.Load()-before, tc.before)
		}
		f.clock.add(refreshEvery)
		if got := charged(t, f.call("GET", "/charges/"+ch.ID, "alice", "", "")); got.Status != tc.before || got.ClientSecret != ch.ClientSecret {
			t.Fatalf("%s: GET before = %+v", name, got)
		}
		if err := f.sim.Resolve(id, tc.succeed); err != nil {
			t.Fatal(err)
		}
		f.clock.add(refreshEvery)
		if got := charged(t, f.call("GET", "/charges/"+ch.ID, "alice", "", "")); got.Status != tc.after || got.ClientSecret != "" || got.NextAction != "" {
			t.Fatalf("%s: GET after = %+v, want %s", name, got, tc.after)
		}
		f.clock.add(refreshEvery)
		before = f.requests.Load()
		if got := charged(t, f.call("GET", "/charges/"+ch.ID, "alice", "", "")); got.Status != tc.after || f.requests.Load() != before {
			t.Fatalf("%s: GET once final = %+v after %d provider requests, want %s from the record alone", name, got, f.requests.Load()-before, tc.after)
		}
	}
	out, err := f.raw.Scan(context.Background(), &dynamodb.ScanInput{TableName: &f.tables[1], ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range out.Items {
		if _, kept := item["client_secret"]; kept {
			t.Fatalf("a charge record keeps the client secret: %v", item[attrChargeID])
		}
	}
}

// A completed key whose record is gone (expired, or deleted by an operator
// so that it may be used again) takes a new request as a new operation:
// charged under the next downstream key, since the provider still keeps the
// one the completed operation used and would refuse another request under
// it. The operation's generation outlives its commit for that.
func TestACompletedKeyIsUsableAgainOnceItsRecordIsGone(t *testing.T) {
	for _, gone := range []string{"expired", "deleted by an operator"} {
		t.Run(gone, func(t *testing.T) {
			f := newFixture(t, func(o *idem.Options) { o.TTL = idem.MinTTL })
			f.sim.SetKeyRetention(3 * provider.KeyRetention) // "at least" 24 hours
			if first := f.call("POST", "/charges", "alice", "k-1", visa); first.StatusCode != 201 {
				t.Fatalf("first = %d %s", first.StatusCode, first.Body)
			}
			if gone == "expired" {
				f.clock.add(idem.MinTTL + time.Hour)
			} else {
				operator, err := idem.New(f.raw, f.tables[0], func(o *idem.Options) { o.Clock = f.clock.now }) // not the function's role
				if err != nil {
					t.Fatal(err)
				}
				rec, err := operator.Inspect(context.Background(), "alice", "k-1")
				if err != nil {
					t.Fatal(err)
				}
				if err := operator.Delete(context.Background(), rec, "the customer asked to use the key again"); err != nil {
					t.Fatal(err)
				}
			}
			other := strings.Replace(visa, "1050", "2000", 1)
			resp := f.call("POST", "/charges", "alice", "k-1", other)
			effects := f.sim.Effects()
			if resp.StatusCode != 201 || len(effects) != 2 || !strings.HasSuffix(effects[1].IdempotencyKey, "-1") || effects[1].Amount != 2000 {
				t.Fatalf("the key used again = %d %s, effects %+v: want a new charge under the next downstream key", resp.StatusCode, resp.Body, effects)
			}
			if strings.Contains(resp.Body, downstreamKey("alice", "k-1", 0)) {
				t.Fatalf("the answer names the downstream key: %s", resp.Body)
			}
		})
	}
}

// The provider's message is never an answer's: it may name the downstream
// key (an idempotency error says "Try using a key other than '…'") or
// other internals of the request. The answer says what happened in its own
// words, with the provider's code when it gives one.
func TestTheProvidersMessageIsNeverPassedThrough(t *testing.T) {
	for _, se := range []*stripe.Error{
		{Type: stripe.ErrorTypeIdempotency, HTTPStatusCode: 400, Msg: "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than 'SECRET-key'."},
		{Type: stripe.ErrorTypeInvalidRequest, HTTPStatusCode: 400, Code: stripe.ErrorCodeParameterInvalidInteger, Msg: "Invalid integer: SECRET"},
	} {
		resp, stored := respond(&charge{}, answer{rejected: se})
		if stored || resp.StatusCode/100 != 4 || strings.Contains(resp.Body, "SECRET") {
			t.Errorf("%s: %d %s stored=%v, want a 4xx of our own words, not stored", se.Type, resp.StatusCode, resp.Body, stored)
		}
	}
}
