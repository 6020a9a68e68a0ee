package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// Settlement never depends on search: with Stripe's search half an hour or
// an hour behind (its documented worst case in an outage), or not offered
// at all, a charge a saved 500 hid is found through the list API and
// answered, not made a second time under the next key.
func TestSettlementFindsTheChargeWithoutSearch(t *testing.T) {
	for _, search := range []string{"30m", "1h", "off"} {
		t.Run(search, func(t *testing.T) {
			f := newFixture(t)
			if err := f.sim.ConfigureSearch(search); err != nil {
				t.Fatal(err)
			}
			f.sim.Inject(provider.Fault{Kind: provider.FailAfterEffect})
			if first := f.call("POST", "/charges", "alice", "k-1", visa); first.StatusCode != 503 {
				t.Fatalf("first = %d %s, want 503", first.StatusCode, first.Body)
			}
			f.clock.add(6 * time.Minute) // past any wait for an index
			retry := f.call("POST", "/charges", "alice", "k-1", visa)
			effects := f.sim.Effects()
			if retry.StatusCode != 201 || len(effects) != 1 || charged(t, retry).ID != effects[0].PaymentIntentID {
				t.Fatalf("retry = %d %s, effects %+v: want the one charge", retry.StatusCode, retry.Body, effects)
			}
		})
	}
}

// An operation whose metadata more than a page of intents carries (a
// second charge made by hand, say) settles on the oldest of them all, the
// first charge, not the oldest of the first page.
func TestSettlementPagesToTheOldestCharge(t *testing.T) {
	f := newFixture(t)
	if err := f.sim.ConfigureSearch("0s"); err != nil {
		t.Fatal(err)
	}
	f.sim.Inject(provider.Fault{Kind: provider.FailAfterEffect})
	if first := f.call("POST", "/charges", "alice", "k-1", visa); first.StatusCode != 503 {
		t.Fatalf("first = %d %s, want 503", first.StatusCode, first.Body)
	}
	oldest := f.sim.Effects()[0].PaymentIntentID
	fp, err := idem.Fingerprint(http.MethodPost, "/charges", []byte(visa), true)
	if err != nil {
		t.Fatal(err)
	}
	c, amount, _ := parseCharge([]byte(visa))
	for i := range 120 {
		f.clock.add(time.Second)
		p := intentParams(intent{req: c, amount: amount, who: payer{paymentMethod: provider.CardVisa}, downstream: "by-hand-" + strconv.Itoa(i), op: downstreamKey("alice", "k-1", 0), request: fp})
		if _, err := f.server.payments.CreatePaymentIntent(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.add(6 * time.Minute)
	retry := f.call("POST", "/charges", "alice", "k-1", visa)
	if retry.StatusCode != 201 || charged(t, retry).ID != oldest {
		t.Fatalf("retry = %d %s, want the first charge %s", retry.StatusCode, retry.Body, oldest)
	}
	if n := len(f.sim.Effects()); n != 121 {
		t.Fatalf("%d effects, want the 121 made before the retry", n)
	}
}

// The payer belongs to the operation: a retry after the customer changed
// their default card sends the provider the card of the first attempt, so
// the provider sees the same request under the key (never an idempotency
// error stored as 422) and charges once.
func TestRetryKeepsThePayerOfTheFirstAttempt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault provider.Fault
	}{
		{"charged, every answer lost", provider.Fault{Kind: provider.DropAfterEffect, Times: 20}},
		{"never reached the provider", provider.Fault{Kind: provider.NotJSON, Times: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.sim.AddCustomer("cus_alice", map[string]string{MetaScope: "alice"}, "pm_a")
			f.sim.AddPaymentMethod("pm_a", "cus_alice", provider.CardVisa)
			f.sim.AddPaymentMethod("pm_b", "cus_alice", provider.CardVisa)
			req := `{"amount":1050,"currency":"usd","customer":"cus_alice"}`
			f.sim.Inject(tc.fault)
			if first := f.call("POST", "/charges", "alice", "k-1", req); first.StatusCode < 500 {
				t.Fatalf("first = %d %s, want a 5xx", first.StatusCode, first.Body)
			}
			f.sim.ClearFaults()
			f.sim.AddCustomer("cus_alice", map[string]string{MetaScope: "alice"}, "pm_b") // the default changed
			retry := f.call("POST", "/charges", "alice", "k-1", req)
			effects := f.sim.Effects()
			if retry.StatusCode != 201 || len(effects) != 1 || effects[0].PaymentMethod != "pm_a" || charged(t, retry).ID != effects[0].PaymentIntentID {
				t.Fatalf("retry = %d %s, effects %+v: want one charge of pm_a, answered", retry.StatusCode, retry.Body, effects)
			}
			if n := f.charges(); n != 1 || f.items() != 3 {
				t.Fatalf("%d charge records, %d items: want the charge, its key's record and its committed marker", n, f.items())
			}
		})
	}
}

// A same-request retry after the record expired, while the provider still
// keeps its key: the committed marker names the first charge's intent,
// whose record is already there; that record is the answer (201, or the
// decline's 402), not a 503 forever.
func TestSameRequestAfterTheRecordExpiredGetsItsCharge(t *testing.T) {
	for _, tc := range []struct {
		body   string
		status int
	}{{visa, 201}, {body(provider.CardDeclined), 402}} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			f := newFixture(t, func(o *idem.Options) { o.TTL = idem.MinTTL })
			f.sim.SetKeyRetention(3 * provider.KeyRetention) // "at least" 24 hours
			first := f.call("POST", "/charges", "alice", "k-1", tc.body)
			if first.StatusCode != tc.status {
				t.Fatalf("first = %d %s", first.StatusCode, first.Body)
			}
			f.clock.add(idem.MinTTL + time.Hour)
			retry := f.call("POST", "/charges", "alice", "k-1", tc.body)
			if retry.StatusCode != tc.status || retry.Body != first.Body || retry.Headers[idemlambda.HeaderReplayed] != "" {
				t.Fatalf("retry after the record expired = %d %s, want the first answer %d %s", retry.StatusCode, retry.Body, first.StatusCode, first.Body)
			}
			if n := len(f.sim.Effects()); n != 1 || f.charges() != 1 || f.items() != 3 {
				t.Fatalf("%d effects, %d charge records, %d items: want one charge, one record, its committed marker", n, f.charges(), f.items())
			}
			if again := f.call("POST", "/charges", "alice", "k-1", tc.body); again.Body != first.Body || again.Headers[idemlambda.HeaderReplayed] != "true" {
				t.Fatalf("then = %d %s, want it replayed", again.StatusCode, again.Body)
			}
		})
	}
}

// A body API Gateway passes base64-encoded (a content type it treats as
// binary) is decoded and charged, its retry replayed; one that does not
// decode is refused before anything is written.
func TestBase64BodyIsDecodedAndUndecodableRefused(t *testing.T) {
	f := newFixture(t)
	binary := apitest.Request{Method: "POST", Path: "/charges", Sub: "alice", Key: "k-1", Body: visa, Header: map[string]string{"Content-Type": "application/octet-stream"},
		Outside: "a content type API Gateway treats as binary, which openapi.yaml does not describe"}
	first := f.Call(context.Background(), binary)
	if first.StatusCode != 201 {
		t.Fatalf("base64 body = %d %s, want 201", first.StatusCode, first.Body)
	}
	if again := f.Call(context.Background(), binary); again.Body != first.Body || again.Headers[idemlambda.HeaderReplayed] != "true" {
		t.Fatalf("its retry = %d %s, want the replay", again.StatusCode, again.Body)
	}
	items := f.items()
	ev := f.event("POST", "/charges", "alice", "k-2", visa)
	ev.Body, ev.IsBase64Encoded = "not base64!"+strings.Repeat("=", 3), true
	resp, err := f.server.routes().Handle(context.Background(), ev)
	if err != nil || resp.StatusCode != 400 || errorCode(t, resp) != "invalid_body" || f.items() != items {
		t.Fatalf("undecodable = %d %s %v, %d items (was %d): want 400 invalid_body, nothing written", resp.StatusCode, resp.Body, err, f.items(), items)
	}
}

// The handler fingerprints the body it is given; a body it cannot read as
// JSON (a base64 text no door decoded) is an error before any provider
// call, never a charge under a fingerprint of nothing.
func TestAnUnreadableBodyIsNeverCharged(t *testing.T) {
	f := newFixture(t)
	c, amount, _ := parseCharge([]byte(visa))
	ev := f.event("POST", "/charges", "alice", "k-1", visa)
	ev.Body = "eyJhbW91bnQiOjEwNTB9" // base64, still encoded
	_, err := f.server.create(context.Background(), idemlambda.Request[events.APIGatewayV2HTTPRequest, chargeBody]{Event: &ev, Body: chargeBody{req: c, amount: amount}, Scope: "alice", Key: "k-1"}, &idem.Tx{})
	if err == nil || len(f.sim.Effects()) != 0 {
		t.Fatalf("err %v, %d effects: want an error and no charge", err, len(f.sim.Effects()))
	}
}
