package main

import (
	"context"
	"errors"
	"net/http"

	"github.com/stripe/stripe-go/v82"
)

// MetaScope is the metadata name under which a provider customer records
// the scope (the tenant) it belongs to. Whoever creates a tenant's
// customers at the provider sets it; the charge trusts nothing else.
const MetaScope = "idem_scope"

// payer is what a charge may use, resolved on the server from the request.
type payer struct {
	paymentMethod string
	customer      string // the scope's own customer, or "" for an unattached method
	offSession    bool   // a saved method charged without the customer present
}

// errNotYours is the one answer for an object that does not exist and for
// one of another scope, so that ids cannot be probed across tenants.
var errNotYours = errors.New("not found")

// resolvePayer checks that what the request names belongs to scope: a
// customer whose metadata names the scope (charged with its default payment
// method, off session), or a payment method that is either attached to
// such a customer or attached to no one (a fresh token from the caller's own
// client, which the provider lets be used once). Anything else, missing or
// foreign, is errNotYours.
func resolvePayer(ctx context.Context, p Payments, scope string, c chargeRequest) (payer, error) {
	if c.Customer != "" {
		cus, err := ownCustomer(ctx, p, scope, c.Customer)
		if err != nil {
			return payer{}, err
		}
		if cus.InvoiceSettings == nil || cus.InvoiceSettings.DefaultPaymentMethod == nil || cus.InvoiceSettings.DefaultPaymentMethod.ID == "" {
			return payer{}, errNoDefaultMethod
		}
		return payer{paymentMethod: cus.InvoiceSettings.DefaultPaymentMethod.ID, customer: cus.ID, offSession: true}, nil
	}
	pm, err := p.PaymentMethod(ctx, c.PaymentMethod)
	if err != nil {
		return payer{}, lookupError(err)
	}
	if pm.Customer == nil || pm.Customer.ID == "" {
		return payer{paymentMethod: pm.ID}, nil
	}
	cus, err := ownCustomer(ctx, p, scope, pm.Customer.ID)
	if err != nil {
		return payer{}, err
	}
	return payer{paymentMethod: pm.ID, customer: cus.ID, offSession: true}, nil
}

var errNoDefaultMethod = errors.New("the customer has no default payment method")

func ownCustomer(ctx context.Context, p Payments, scope, id string) (*stripe.Customer, error) {
	cus, err := p.Customer(ctx, id)
	if err != nil {
		return nil, lookupError(err)
	}
	if cus.Deleted || cus.Metadata[MetaScope] != scope {
		return nil, errNotYours
	}
	return cus, nil
}

// lookupError sorts a failed read: the provider's "no such object" is
// errNotYours, anything else a transient failure (a read saves nothing at
// the provider, so a retry is safe).
func lookupError(err error) error {
	var se *stripe.Error
	if errors.As(err, &se) && se.HTTPStatusCode == http.StatusNotFound && se.Code == stripe.ErrorCodeResourceMissing {
		return errNotYours
	}
	if _, terr := classify(nil, err); terr != nil {
		return terr
	}
	return transient(http.StatusBadGateway, "provider_unavailable", retrySoon, err)
}
