package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// The charge records what the provider charged. A retry that adopts the
// intent its operation left at the provider (here one made by an older
// release, its answer lost behind a saved 500) takes the amount and
// currency of the charge record and of GET /charges/{id} from that intent;
// when they are not what the retry asks, the retry is refused as another
// request (422, naming the charge), never recorded with its own values,
// and its replay says the same. No second charge is made either way.
func TestTheChargeRecordsWhatTheProviderCharged(t *testing.T) {
	for _, tc := range []struct {
		name     string
		amount   int64
		currency string
		status   int
	}{
		{"another amount", 9990, "usd", 422},
		{"another currency", 1050, "eur", 422},
		{"what the request asks", 1050, "usd", 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.sim.Inject(provider.Fault{Kind: provider.FailBeforeEffect})
			if first := f.call("POST", "/charges", "alice", "k-1", visa); first.StatusCode != 503 {
				t.Fatalf("first = %d %s, want 503", first.StatusCode, first.Body)
			}
			held := f.intentOfAnOlderRelease(t, tc.amount, tc.currency)
			retry := f.call("POST", "/charges", "alice", "k-1", visa)
			if retry.StatusCode != tc.status {
				t.Fatalf("retry = %d %s, want %d", retry.StatusCode, retry.Body, tc.status)
			}
			var answered struct {
				Code     string `json:"code"`
				ID       string `json:"id"`
				ChargeID string `json:"charge_id"`
				Amount   int64  `json:"amount"`
				Currency string `json:"currency"`
			}
			if err := json.Unmarshal([]byte(retry.Body), &answered); err != nil {
				t.Fatalf("retry = %s: %v", retry.Body, err)
			}
			switch {
			case tc.status == 422 && (answered.Code != "idempotency_key_reused" || answered.ChargeID != held):
				t.Fatalf("retry = %s, want idempotency_key_reused naming %s", retry.Body, held)
			case tc.status == 201 && (answered.ID != held || answered.Amount != tc.amount || answered.Currency != tc.currency):
				t.Fatalf("retry = %s, want %s of %d %s", retry.Body, held, tc.amount, tc.currency)
			}
			got := charged(t, f.call("GET", "/charges/"+held, "alice", "", ""))
			if got.Amount != tc.amount || got.Currency != tc.currency {
				t.Fatalf("GET = %+v, want the provider's %d %s", got, tc.amount, tc.currency)
			}
			if again := f.call("POST", "/charges", "alice", "k-1", visa); again.Body != retry.Body || again.Headers[idemlambda.HeaderReplayed] != "true" {
				t.Fatalf("replay = %d %s, want %s", again.StatusCode, again.Body, retry.Body)
			}
			if effects := f.sim.Effects(); len(effects) != 1 || effects[0].PaymentIntentID != held || f.charges() != 1 {
				t.Fatalf("effects %+v, %d charge records: want the one charge the provider holds", effects, f.charges())
			}
		})
	}
}

// intentOfAnOlderRelease makes at the provider the intent that an attempt
// of (alice, k-1) with visa's body would have made under a release that
// read the body as amount and currency: the operation's and the request's
// metadata, its own key. It returns the intent's id.
func (f *fixture) intentOfAnOlderRelease(t *testing.T, amount int64, currency string) string {
	t.Helper()
	fp, err := idem.Fingerprint(http.MethodPost, "/charges", []byte(visa), true)
	if err != nil {
		t.Fatal(err)
	}
	c, _, _ := parseCharge([]byte(visa))
	c.Currency = currency
	p := intentParams(intent{req: c, amount: amount, who: payer{paymentMethod: provider.CardVisa}, downstream: "an-older-release", op: downstreamKey("alice", "k-1", 0), request: fp})
	pi, err := f.server.payments.CreatePaymentIntent(context.Background(), p)
	if err != nil || !strings.HasPrefix(pi.ID, "pi_") {
		t.Fatalf("the older release's intent: %+v, %v", pi, err)
	}
	return pi.ID
}
