package main

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/currency"

	"github.com/idemkeys/idem/functions/internal/httpx"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// chargeRequest is the body of POST /charges.
type chargeRequest struct {
	// Amount in the currency's minor unit as the provider counts it (cents
	// for USD, yen for JPY, fils for KWD), a positive integer.
	Amount json.Number `json:"amount"`
	// Currency is an ISO 4217 code, in either case.
	Currency string `json:"currency"`
	// Exactly one of PaymentMethod (a provider token such as pm_card_visa)
	// and Customer (a provider customer id) says what to charge.
	PaymentMethod string            `json:"payment_method,omitempty"`
	Customer      string            `json:"customer,omitempty"`
	Description   string            `json:"description,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
}

// The provider's own limits, so that a request it would refuse is refused
// here first, before anything is claimed. Metadata keys and values are
// counted in characters, as Stripe documents them.
const (
	maxAmount         = 99_999_999
	maxDescription    = 1000
	maxMetadataKeys   = 50
	maxMetadataKey    = 40
	maxMetadataValue  = 500
	maxReferenceBytes = 255
)

var reference = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// parseCharge validates a body; the amount it returns is the parsed one.
func parseCharge(body []byte) (chargeRequest, int64, *idemlambda.Refusal) {
	var c chargeRequest
	if err := httpx.DecodeStrict(body, &c); err != nil {
		return c, 0, httpx.Invalid("%v", err)
	}
	amount, err := strconv.ParseInt(c.Amount.String(), 10, 64)
	switch {
	case c.Amount == "":
		return c, 0, httpx.Invalid("amount is required: a positive integer in the currency's minor unit")
	case err != nil:
		return c, 0, httpx.Invalid("amount must be an integer in the currency's minor unit (e.g. 1050 for 10.50), not %s", c.Amount)
	case amount <= 0:
		return c, 0, httpx.Invalid("amount must be positive")
	case amount > maxAmount:
		return c, 0, httpx.Invalid("amount must be at most %d", maxAmount)
	}
	c.Currency = strings.ToLower(c.Currency)
	if refusal := checkAmount(c.Currency, amount); refusal != nil {
		return c, 0, refusal
	}
	switch {
	case (c.PaymentMethod == "") == (c.Customer == ""):
		return c, 0, httpx.Invalid("give exactly one of payment_method and customer")
	case c.PaymentMethod != "" && (len(c.PaymentMethod) > maxReferenceBytes || !reference.MatchString(c.PaymentMethod)):
		return c, 0, httpx.Invalid("payment_method must be a provider token of letters, digits and underscores")
	case c.Customer != "" && (len(c.Customer) > maxReferenceBytes || !reference.MatchString(c.Customer)):
		return c, 0, httpx.Invalid("customer must be a provider id of letters, digits and underscores")
	case len(c.Description) > maxDescription:
		return c, 0, httpx.Invalid("description must be at most %d bytes", maxDescription)
	}
	if refusal := checkMetadata(c.Metadata); refusal != nil {
		return c, 0, refusal
	}
	return c, amount, nil
}

// ownMetadata are the metadata keys the charge sets on every intent; they
// count against the provider's limit, and a client may not set them.
var ownMetadata = []string{MetaOperation, MetaRequest, MetaGeneration}

// checkMetadata holds the client's metadata to the provider's limits
// (Stripe: 50 keys, key names up to 40 characters without square brackets,
// values up to 500 characters), counting the charge's own keys, so that
// the provider never refuses what was accepted here. The refusal names the
// field.
func checkMetadata(md map[string]string) *idemlambda.Refusal {
	if room := maxMetadataKeys - len(ownMetadata); len(md) > room {
		return httpx.Invalid("metadata has %d keys; at most %d are allowed (the provider's %d, less the charge's own %d)", len(md), room, maxMetadataKeys, len(ownMetadata))
	}
	keys := slices.Sorted(maps.Keys(md))
	for _, k := range keys {
		v := md[k]
		switch {
		case k == "":
			return httpx.Invalid("metadata has an empty key")
		case utf8.RuneCountInString(k) > maxMetadataKey:
			return httpx.Invalid("metadata key %q is over %d characters", k, maxMetadataKey)
		case strings.ContainsAny(k, "[]"):
			return httpx.Invalid("metadata key %q has a square bracket, which the provider does not allow", k)
		case slices.Contains(ownMetadata, k) || k == MetaScope:
			return httpx.Invalid("metadata key %q is reserved for the charge's own use", k)
		case utf8.RuneCountInString(v) > maxMetadataValue:
			return httpx.Invalid("metadata[%q] is over %d characters", k, maxMetadataValue)
		}
	}
	return nil
}

// chargeBody is a parsed POST /charges body: what the handler gets.
type chargeBody struct {
	req    chargeRequest
	amount int64 // the parsed amount
}

// parseChargeBody is the adapter's parse step: it runs once, before the claim.
func parseChargeBody(body []byte) (chargeBody, error) {
	c, amount, refusal := parseCharge(body)
	if refusal != nil {
		return chargeBody{}, refusal
	}
	return chargeBody{req: c, amount: amount}, nil
}

// notCurrencies are ISO 4217 codes that name no currency a card is
// charged in: precious metals, testing, no currency, and funds codes.
var notCurrencies = map[string]bool{
	"xau": true, "xag": true, "xpt": true, "xpd": true, "xts": true, "xxx": true, "xdr": true, "xsu": true, "xua": true,
	"xba": true, "xbb": true, "xbc": true, "xbd": true, "bov": true, "che": true, "chw": true, "clf": true, "cou": true,
	"mxv": true, "usn": true, "uyi": true, "uyw": true,
}

// minimums are the provider's documented minimum charge amounts, in minor
// units (Stripe, "Minimum and maximum charge amounts"). Elsewhere the
// minimum is the equivalent of 0.50 USD in the settlement currency, which
// only the provider can check.
var minimums = map[string]int64{
	"usd": 50, "aed": 200, "aud": 50, "bgn": 100, "brl": 50, "cad": 50, "chf": 50, "czk": 1500, "dkk": 250, "eur": 50,
	"gbp": 30, "hkd": 400, "huf": 17500, "inr": 50, "jpy": 50, "mxn": 1000, "myr": 200, "nok": 300, "nzd": 50,
	"pln": 200, "ron": 200, "sek": 300, "sgd": 50, "thb": 1000,
}

// checkAmount holds an amount in a currency to what the provider accepts:
// an ISO 4217 currency (golang.org/x/text/currency), in its minor unit as
// the provider counts it, at least the provider's minimum, and for a
// three-decimal currency a multiple of ten (Stripe: "the least-significant
// (last) digit to be 0"); ISK, two-decimal in the API but charged in whole
// krónur, a multiple of 100.
func checkAmount(cur string, amount int64) *idemlambda.Refusal {
	unit, err := currency.ParseISO(cur)
	if err != nil || len(cur) != 3 || notCurrencies[cur] {
		return httpx.Invalid("currency %q is not an ISO 4217 currency code", cur)
	}
	scale, _ := currency.Standard.Rounding(unit)
	step := int64(1)
	switch {
	case scale == 3:
		step = 10
	case cur == "isk":
		step = 100
	}
	switch {
	case amount%step != 0:
		return httpx.Invalid("amount in %s must be a multiple of %d minor units", strings.ToUpper(cur), step)
	case amount < minimums[cur]:
		return httpx.Invalid("amount in %s must be at least %d minor units", strings.ToUpper(cur), minimums[cur])
	}
	return nil
}
