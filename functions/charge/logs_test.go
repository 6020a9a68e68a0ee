package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/proc"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idem"
)

// TestLogsCarryNoBodyKeyOrCardField runs every kind of outcome with the
// logger the function uses in Lambda (JSON), at debug so that nothing is
// filtered, through the real provider client (stripe-go, whose own logger
// is the function's), and checks that no log line holds the key, the body
// or any of its fields, or anything of a provider error object: card,
// billing details, description, metadata, object ids.
func TestLogsCarryNoBodyKeyOrCardField(t *testing.T) {
	f := newFixture(t)
	var logs proc.Output
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store, err := idem.New(f.fn, f.tables[0], func(o *idem.Options) { o.Logger, o.Clock = log, f.clock.now })
	if err != nil {
		t.Fatal(err)
	}
	payments := newStripePayments(f.api, secret, log, nil)
	payments.keyInUse = []time.Duration{time.Millisecond}
	f.server.store, f.server.log, f.server.payments = store, log, payments
	f.Handle = f.server.routes()
	f.sim.AddCustomer("cus_SECRETalice", map[string]string{MetaScope: "alice"}, "pm_SECRETsaved")
	f.sim.AddPaymentMethod("pm_SECRETsaved", "cus_SECRETalice", provider.CardExpired)

	const key = "key-SECRET-7f3a9c"
	secrets := []string{key, "desc-SECRET-4411", "meta-SECRET-9090", "pm_card_visa", provider.CardDeclined, "4242424242424242",
		"SECRET", "Billing-Rosen", "jenny.billing", "Townsend", "fpSIM", "exp_year", "last4", "client_secret", "Request blocked"}
	body := `{"amount":1234,"currency":"usd","payment_method":"pm_card_visa","description":"desc-SECRET-4411","metadata":{"note":"meta-SECRET-9090"}}`
	with := func(pm string) string { return strings.Replace(body, "pm_card_visa", pm, 1) }
	f.call("POST", "/charges", "alice", key, body)                                         // executed
	f.call("POST", "/charges", "alice", key, body)                                         // replayed
	f.call("POST", "/charges", "alice", key, strings.Replace(body, "1234", "999", 1))      // 422
	f.call("POST", "/charges", "alice", key+"-card", `{"card_number":"4242424242424242"}`) // refused
	f.call("POST", "/charges", "alice", key+"-d", with(provider.CardDeclined))             // declined: the error carries the card
	f.call("POST", "/charges", "alice", key+"-s", with("pm_SECRETsaved"))                  // a saved card, expired
	f.call("POST", "/charges", "alice", key+"-u", with("pm_SECRETforeign"))                // unknown object
	f.sim.Inject(provider.Fault{Kind: provider.FailAfterEffect})
	f.call("POST", "/charges", "alice", key+"-f", body) // a saved 500: outcome unknown
	f.sim.Inject(provider.Fault{Kind: provider.NotJSON, Times: 3})
	f.call("POST", "/charges", "alice", key+"-p", body) // a proxy's page
	f.sim.Inject(provider.Fault{Kind: provider.KeyInUse, Times: 2})
	f.call("POST", "/charges", "alice", key+"-b", body) // busy

	out := logs.String()
	for _, want := range []string{`"outcome":"executed"`, `"outcome":"replayed"`, `"key_hash"`, `"provider client"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %s in the logs, so the test proves nothing:\n%s", want, out)
		}
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("the logs contain %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, `"amount"`) || strings.Contains(out, `"body"`) {
		t.Errorf("the logs contain a body field:\n%s", out)
	}
}
