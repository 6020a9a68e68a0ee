package provider

import (
	"net/http"
)

// Test payment methods, as Stripe's test mode names them, and one of the
// simulator's own for an asynchronous method.
const (
	CardVisa              = "pm_card_visa"
	CardDeclined          = "pm_card_chargeDeclined"                  // card_declined, generic_decline
	CardInsufficientFunds = "pm_card_chargeDeclinedInsufficientFunds" // card_declined, insufficient_funds
	CardExpired           = "pm_card_chargeDeclinedExpiredCard"       // expired_card, no decline_code
	CardIncorrectCVC      = "pm_card_chargeDeclinedIncorrectCvc"      // incorrect_cvc, no decline_code
	CardProcessingError   = "pm_card_chargeDeclinedProcessingError"   // processing_error, no decline_code
	CardThreeDSRequired   = "pm_card_threeDSecure2Required"           // requires_action; off_session: authentication_required
	Processing            = "pm_sim_processing"                       // processing: an asynchronous method (the simulator's own token)
)

// testCard is how a test payment method behaves when confirmed.
type testCard struct {
	last4       string
	code        string // the card_error's code, "" for none
	declineCode string
	status      string // the intent's status when it does not fail
}

var testCards = map[string]testCard{
	CardVisa:              {last4: "4242", status: "succeeded"},
	"pm_card_mastercard":  {last4: "4444", status: "succeeded"},
	CardDeclined:          {last4: "0002", code: "card_declined", declineCode: "generic_decline"},
	CardInsufficientFunds: {last4: "9995", code: "card_declined", declineCode: "insufficient_funds"},
	CardExpired:           {last4: "0069", code: "expired_card"},
	CardIncorrectCVC:      {last4: "0127", code: "incorrect_cvc"},
	CardProcessingError:   {last4: "0119", code: "processing_error"},
	CardThreeDSRequired:   {last4: "3220", status: "requires_action"},
	Processing:            {last4: "6789", status: "processing"},
}

// PaymentIntent is the subset of the provider's object that is served.
type PaymentIntent struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Amount        int64             `json:"amount"`
	Currency      string            `json:"currency"`
	Status        string            `json:"status"`
	Customer      string            `json:"customer,omitempty"`
	PaymentMethod string            `json:"payment_method,omitempty"`
	Description   string            `json:"description,omitempty"`
	Metadata      map[string]string `json:"metadata"`
	Created       int64             `json:"created"`
	LatestCharge  string            `json:"latest_charge,omitempty"`
	NextAction    map[string]string `json:"next_action,omitempty"`
	// LastPaymentError is the card error of a declined confirmation.
	LastPaymentError map[string]any `json:"last_payment_error,omitempty"`
	ClientSecret     string         `json:"client_secret,omitempty"`
	seq              int            // the order of creation, for lists and pages
}

// Customer is a provider customer; Metadata is where a platform records
// whose it is.
type Customer struct {
	ID              string            `json:"id"`
	Object          string            `json:"object"`
	Metadata        map[string]string `json:"metadata"`
	InvoiceSettings invoiceSettings   `json:"invoice_settings"`
	Email           string            `json:"email,omitempty"`
}

type invoiceSettings struct {
	DefaultPaymentMethod *string `json:"default_payment_method"`
}

// PaymentMethod is a card, attached to a customer or not, with the details
// Stripe returns and that must never reach a log.
type PaymentMethod struct {
	ID             string         `json:"id"`
	Object         string         `json:"object"`
	Type           string         `json:"type"`
	Customer       *string        `json:"customer"`
	Card           map[string]any `json:"card"`
	BillingDetails map[string]any `json:"billing_details"`
	test           string         // the test token whose behaviour it has
}

// AddCustomer saves a customer with metadata, and defaultPM as its
// invoice_settings.default_payment_method when not empty.
func (s *Simulator) AddCustomer(id string, metadata map[string]string, defaultPM string) {
	c := &Customer{ID: id, Object: "customer", Metadata: map[string]string{}, Email: id + "@example.test"}
	for k, v := range metadata {
		c.Metadata[k] = v
	}
	if defaultPM != "" {
		c.InvoiceSettings.DefaultPaymentMethod = &defaultPM
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.customers[id] = c
}

// AddPaymentMethod saves a card attached to customer, behaving as the test
// token like (CardVisa, CardDeclined, ...).
func (s *Simulator) AddPaymentMethod(id, customer, like string) {
	pm := paymentMethod(id, like)
	pm.Customer = &customer
	s.mu.Lock()
	defer s.mu.Unlock()
	s.methods[id] = pm
}

// paymentMethod is the object for id, a card that behaves as the test token
// like. Its card and billing details are what an error object carries.
func paymentMethod(id, like string) *PaymentMethod {
	tc := testCards[like]
	return &PaymentMethod{
		ID: id, Object: "payment_method", Type: "card", test: like,
		Card: map[string]any{"brand": "visa", "last4": tc.last4, "exp_month": 12, "exp_year": 2034,
			"fingerprint": "fpSIM" + tc.last4 + "x7Qz", "funding": "credit", "country": "US"},
		BillingDetails: map[string]any{"name": "Jenny Billing-Rosen", "email": "jenny.billing@example.test",
			"address": map[string]any{"line1": "510 Townsend St", "postal_code": "94103", "country": "US"}},
	}
}

// lookupMethod finds a saved payment method, or a test token (which, as in
// Stripe's test mode, stands for a new unattached card).
func (s *Simulator) lookupMethod(id string) (*PaymentMethod, bool) {
	if pm, ok := s.methods[id]; ok {
		return pm, true
	}
	if _, ok := testCards[id]; ok {
		return paymentMethod(id, id), true
	}
	return nil, false
}

// retrieve answers GET /v1/<objects>/{id}.
func (s *Simulator) retrieve(w http.ResponseWriter, object, id string) {
	s.mu.Lock()
	var v any
	switch object {
	case "payment_intent":
		if pi, ok := s.intents[id]; ok {
			v = pi
		}
	case "customer":
		if c, ok := s.customers[id]; ok {
			v = c
		}
	case "payment_method":
		if pm, ok := s.lookupMethod(id); ok {
			v = pm
		}
	}
	s.mu.Unlock()
	if v == nil {
		e := apiError("invalid_request_error", "resource_missing", "No such "+object+": '"+id+"'")
		e["error"]["param"] = "id"
		writeJSON(w, http.StatusNotFound, e)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
