package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/functions/internal/app"
	"github.com/idemkeys/idem/pkg/idem"
)

// chargeRequest is the body of POST /charges.
type chargeRequest struct {
	// Amount in the currency's minor unit (cents for USD), a positive integer.
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
// here first, before anything is claimed.
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
func parseCharge(body []byte) (chargeRequest, int64, *idem.Refusal) {
	var c chargeRequest
	if err := app.DecodeStrict(body, &c); err != nil {
		return c, 0, app.Invalid("%v", err)
	}
	amount, err := strconv.ParseInt(c.Amount.String(), 10, 64)
	switch {
	case c.Amount == "":
		return c, 0, app.Invalid("amount is required: a positive integer in the currency's minor unit")
	case err != nil:
		return c, 0, app.Invalid("amount must be an integer in the currency's minor unit (e.g. 1050 for 10.50), not %s", c.Amount)
	case amount <= 0:
		return c, 0, app.Invalid("amount must be positive")
	case amount > maxAmount:
		return c, 0, app.Invalid("amount must be at most %d", maxAmount)
	}
	c.Currency = strings.ToLower(c.Currency)
	if !isCurrency(c.Currency) {
		return c, 0, app.Invalid("currency %q is not an ISO 4217 code", c.Currency)
	}
	switch {
	case (c.PaymentMethod == "") == (c.Customer == ""):
		return c, 0, app.Invalid("give exactly one of payment_method and customer")
	case c.PaymentMethod != "" && (len(c.PaymentMethod) > maxReferenceBytes || !reference.MatchString(c.PaymentMethod)):
		return c, 0, app.Invalid("payment_method must be a provider token of letters, digits and underscores")
	case c.Customer != "" && (len(c.Customer) > maxReferenceBytes || !reference.MatchString(c.Customer)):
		return c, 0, app.Invalid("customer must be a provider id of letters, digits and underscores")
	case len(c.Description) > maxDescription:
		return c, 0, app.Invalid("description must be at most %d bytes", maxDescription)
	case len(c.Metadata) > maxMetadataKeys:
		return c, 0, app.Invalid("metadata may have at most %d keys", maxMetadataKeys)
	}
	for k, v := range c.Metadata {
		if k == "" || len(k) > maxMetadataKey || len(v) > maxMetadataValue {
			return c, 0, app.Invalid("metadata keys must be 1 to %d bytes and values at most %d", maxMetadataKey, maxMetadataValue)
		}
	}
	return c, amount, nil
}

func validateCharge(req *events.APIGatewayV2HTTPRequest) *idem.Refusal {
	_, _, refusal := parseCharge([]byte(req.Body))
	return refusal
}

// iso4217 lists the active ISO 4217 currency codes.
const iso4217 = "aed afn all amd ang aoa ars aud awg azn bam bbd bdt bgn bhd bif bmd bnd bob bov brl bsd btn bwp byn bzd " +
	"cad cdf che chf chw clf clp cny cop cou crc cuc cup cve czk djf dkk dop dzd egp ern etb eur fjd fkp gbp gel ghs gip " +
	"gmd gnf gtq gyd hkd hnl htg huf idr ils inr iqd irr isk jmd jod jpy kes kgs khr kmf kpw krw kwd kyd kzt lak lbp lkr " +
	"lrd lsl lyd mad mdl mga mkd mmk mnt mop mru mur mvr mwk mxn mxv myr mzn nad ngn nio nok npr nzd omr pab pen pgk php " +
	"pkr pln pyg qar ron rsd rub rwf sar sbd scr sdg sek sgd shp sle sll sos srd ssp stn svc syp szl thb tjs tmt tnd top " +
	"try ttd twd tzs uah ugx usd usn uyi uyu uyw uzs ved ves vnd vuv wst xaf xag xau xba xbb xbc xbd xcd xcg xdr xof xpd " +
	"xpf xpt xsu xts xua xxx yer zar zmw zwg zwl"

func isCurrency(c string) bool {
	return len(c) == 3 && strings.Contains(" "+iso4217+" ", " "+c+" ")
}
