package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkeys/idem/functions/internal/apitest"
)

// Amounts and currencies as the provider documents them: minor units,
// three-decimal currencies ending in 0, ISK in whole krónur, the minimum
// charge amounts, eight digits at most, and ISO 4217 codes that are
// currencies.
func TestCurrencyAndAmountRules(t *testing.T) {
	for _, tc := range []struct {
		currency string
		amount   int64
		ok       bool
	}{
		{"usd", 50, true}, // $0.50, the minimum
		{"usd", 49, false},
		{"USD", 1050, true}, // either case
		{"eur", 50, true},
		{"gbp", 30, true},
		{"gbp", 29, false},
		{"jpy", 50, true}, // zero-decimal: ¥50
		{"jpy", 49, false},
		{"huf", 17500, true},
		{"huf", 17499, false},
		{"kwd", 5120, true}, // three-decimal: 5.120 KWD
		{"kwd", 5124, false},
		{"bhd", 1000, true},
		{"bhd", 1001, false},
		{"jod", 1005, false},
		{"omr", 990, true},
		{"tnd", 7, false},
		{"isk", 50000, true}, // 500 krónur, in the API's two decimals
		{"isk", 50050, false},
		{"vnd", 1, true}, // no documented minimum here: the provider checks its equivalent
		{"usd", 99_999_999, true},
		{"usd", 100_000_000, false},
		{"xyz", 1000, false},
		{"xau", 1000, false}, // gold: ISO 4217, not a currency to charge
		{"xts", 1000, false},
		{"usn", 1000, false}, // a funds code
		{"us", 1000, false},
		{"usdd", 1000, false},
	} {
		b := `{"amount":` + strconv.FormatInt(tc.amount, 10) + `,"currency":"` + tc.currency + `","payment_method":"pm_card_visa"}`
		_, _, refusal := parseCharge([]byte(b))
		if (refusal == nil) != tc.ok {
			t.Errorf("%d %s: refusal %v, want ok=%v", tc.amount, tc.currency, refusal, tc.ok)
		}
	}
}

// Metadata as the provider limits it, counting the charge's own keys: a
// request the provider would refuse (and the charge then store as a final
// provider_rejected) is refused here first, naming the field, and nothing
// is written or sent.
func TestMetadataPastTheProvidersLimitsIsRefusedFirst(t *testing.T) {
	f := newFixture(t)
	with := func(n int, key func(i int) string, value string) string {
		md := map[string]string{}
		for i := range n {
			md[key(i)] = value
		}
		b, _ := json.Marshal(map[string]any{"amount": 1050, "currency": "usd", "payment_method": "pm_card_visa", "metadata": md})
		return string(b)
	}
	numbered := func(i int) string { return "k" + strconv.Itoa(i) }
	for _, tc := range []struct {
		name, body, field string
		ok                bool
	}{
		{"47 keys: 50 with the charge's", with(47, numbered, "v"), "", true},
		{"48 keys: 51 with the charge's", with(48, numbered, "v"), "metadata", false},
		{"50 keys", with(50, numbered, "v"), "metadata", false},
		{"a 40-character key", with(1, func(int) string { return strings.Repeat("é", 40) }, "v"), "", true},
		{"a 41-character key", with(1, func(int) string { return strings.Repeat("k", 41) }, "v"), "metadata key", false},
		{"a 500-character value", with(1, numbered, strings.Repeat("é", 500)), "", true},
		{"a 501-character value", with(1, numbered, strings.Repeat("v", 501)), "metadata[", false},
		{"a bracketed key", with(1, func(int) string { return "a[b]" }, "v"), "metadata key", false},
		{"the charge's own key", with(1, func(int) string { return MetaOperation }, "v"), "metadata key", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.sim.Effects())
			items := f.items()
			resp := f.call("POST", "/charges", "alice", "k-"+tc.name, tc.body)
			switch {
			case tc.ok && resp.StatusCode != 201:
				t.Fatalf("got %d %s, want 201", resp.StatusCode, resp.Body)
			case !tc.ok && (resp.StatusCode != 400 || errorCode(t, resp) != "invalid_request" || !strings.Contains(resp.Body, tc.field)):
				t.Fatalf("got %d %s, want 400 naming %s", resp.StatusCode, resp.Body, tc.field)
			case !tc.ok && (len(f.sim.Effects()) != before || f.items() != items):
				t.Fatalf("a refused request wrote or sent something")
			}
		})
	}
}

// TestABodyNotDeclaredJSONIsHeldToJSONsCanonicalForm: POST /charges reads
// every body as JSON, so one sent as text/plain with both "amount" and
// "AMOUNT", which a first-wins reader and the parse step read
// differently, is refused before anything is written, the key unclaimed
// and the provider never asked: the corrected request under the same key
// is then charged.
func TestABodyNotDeclaredJSONIsHeldToJSONsCanonicalForm(t *testing.T) {
	f := newFixture(t)
	folded := `{"amount":1050,"AMOUNT":99999,"currency":"usd","payment_method":"pm_card_visa"}`
	resp := f.Call(context.Background(), apitest.Request{Method: "POST", Path: "/charges", Sub: "alice", Key: "k-1", Body: folded, Header: map[string]string{"Content-Type": "text/plain"}})
	if resp.StatusCode != 400 || errorCode(t, resp) != "invalid_json" {
		t.Fatalf("got %d %s, want 400 invalid_json", resp.StatusCode, resp.Body)
	}
	if n, asked := f.items(), f.requests.Load(); n != 0 || asked != 0 {
		t.Fatalf("%d items written, %d provider requests; want none", n, asked)
	}
	if again := f.call("POST", "/charges", "alice", "k-1", visa); again.StatusCode != 201 || f.charges() != 1 {
		t.Fatalf("the corrected request under the same key: %d %s, %d charges; want 201 and one charge", again.StatusCode, again.Body, f.charges())
	}
}

// A card number in the free text a charge carries (description, metadata
// keys and values) would be stored, replayed and sent to the provider, so
// it is refused first, naming the field but not echoing the number, and
// nothing is written or sent. A card number is a Luhn-valid run of 13 to
// 19 digits, whole or in groups split by spaces or dashes; numbers that
// are not one (Luhn-invalid, too short, or one group of more digits than
// any card has) are accepted.
func TestCardNumbersInFreeTextAreRefusedFirst(t *testing.T) {
	f := newFixture(t)
	with := func(desc string, md map[string]string) string {
		req := map[string]any{"amount": 1050, "currency": "usd", "payment_method": "pm_card_visa", "description": desc}
		if md != nil {
			req["metadata"] = md
		}
		b, _ := json.Marshal(req)
		return string(b)
	}
	for _, tc := range []struct {
		name, body, field string
	}{
		{"a visa number in the description", with("tea for 4242424242424242 thanks", nil), "description"},
		{"one in groups of four by spaces", with("card 4242 4242 4242 4242", nil), "description"},
		{"one in groups by dashes", with("4000-0566-5566-5556", nil), "description"},
		{"an amex number of 15 digits", with("378282246310005", nil), "description"},
		{"a 13-digit number", with("4222222222222", nil), "description"},
		{"a 19-digit number", with("6011 0009 9013 9424 017", nil), "description"},
		{"one followed by another group", with("4242 4242 4242 4242 1234", nil), "description"},
		{"one in a metadata value", with("tea", map[string]string{"note": "pan=5555555555554444"}), "metadata"},
		{"one in a metadata key", with("tea", map[string]string{"5555555555554444": "x"}), "metadata"},
		{"a Luhn-invalid 16 digits", with("ref 4242424242424241", nil), "ok"},
		{"a 12-digit Luhn-valid number", with("424242424242 is short", nil), "ok"},
		{"a 20-digit reference in one group", with("ref 42424242424242424242", nil), "ok"},
		{"a phone number and a date", with("call +1 415-555-0100 on 2026-12-06", map[string]string{"order": "o-1234"}), "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.sim.Effects())
			items := f.items()
			resp := f.call("POST", "/charges", "alice", "k-"+tc.name, tc.body)
			if tc.field == "ok" {
				if resp.StatusCode != 201 {
					t.Fatalf("got %d %s, want 201", resp.StatusCode, resp.Body)
				}
				return
			}
			if resp.StatusCode != 400 || errorCode(t, resp) != "invalid_request" || !strings.Contains(resp.Body, tc.field) || !strings.Contains(resp.Body, "card number") {
				t.Fatalf("got %d %s, want 400 naming %q and a card number", resp.StatusCode, resp.Body, tc.field)
			}
			for _, d := range []string{"4242", "5555", "0005", "2222", "9424"} {
				if strings.Contains(resp.Body, d) {
					t.Fatalf("the refusal echoes the number: %s", resp.Body)
				}
			}
			if len(f.sim.Effects()) != before || f.items() != items {
				t.Fatalf("a refused request wrote or sent something")
			}
		})
	}
}

func TestLuhn(t *testing.T) {
	for digits, ok := range map[string]bool{
		"4242424242424242": true, "4242424242424241": false, "378282246310005": true, "79927398713": true, "79927398710": false,
	} {
		if luhn(digits) != ok {
			t.Errorf("luhn(%s) = %v, want %v", digits, !ok, ok)
		}
	}
}
