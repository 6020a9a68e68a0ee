package main

import (
	"strconv"
	"testing"
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
