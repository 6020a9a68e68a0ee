package idemlambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// An event's source and detail type are told apart in its fingerprint,
// whatever '/' either holds: "shop/orders" + "Placed" and "shop" +
// "orders/Placed" under one id are two events, the second refused, not
// skipped as a duplicate.
func TestAnEventsSourceAndDetailTypeAreToldApart(t *testing.T) {
	for _, c := range []struct{ first, second [2]string }{
		{[2]string{"shop/orders", "Placed"}, [2]string{"shop", "orders/Placed"}},
		{[2]string{"shop", "orders/Placed"}, [2]string{"shop/orders", "Placed"}},
		{[2]string{"shop%2Forders", "Placed"}, [2]string{"shop/orders", "Placed"}},
	} {
		s := idemtest.NewStore(t)
		runs := 0
		handle := idemlambda.EventBridge(s, func(context.Context, idemlambda.Event[events.CloudWatchEvent], *idem.Tx) error {
			runs++
			return nil
		}, func(o *idemlambda.ConsumerOptions[events.CloudWatchEvent]) { o.Scope = "orders-consumer" })
		ev := events.CloudWatchEvent{ID: "e1", Source: c.first[0], DetailType: c.first[1], Detail: json.RawMessage(`{}`)}
		if err := handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		ev.Source, ev.DetailType = c.second[0], c.second[1]
		if err := handle(context.Background(), ev); !errors.Is(err, idem.ErrFingerprintMismatch) || runs != 1 {
			t.Errorf("%q then %q under one id: %v after %d runs; want ErrFingerprintMismatch after one", c.first, c.second, err, runs)
		}
	}
}

// fingerprints is a Doer that keeps the fingerprint of each request.
type fingerprints []string

func (f *fingerprints) Do(_ context.Context, req idem.Request, _ idem.Work) (idem.Result, error) {
	*f = append(*f, req.Fingerprint)
	return idem.Result{Replayed: true}, nil
}

func (f *fingerprints) DoAtomic(ctx context.Context, req idem.Request, w idem.Work) (idem.Result, error) {
	return f.Do(ctx, req, w)
}

// An event whose source holds no '/' nor '%' (AWS's own, most custom
// ones) keeps the fingerprint it had: its source and detail type joined
// by '/', so that a redelivery of an event processed by an earlier version
// is still a duplicate.
func TestAnEventsFingerprintIsStableForASourceWithoutASlash(t *testing.T) {
	var got fingerprints
	handle := idemlambda.EventBridge(&got, func(context.Context, idemlambda.Event[events.CloudWatchEvent], *idem.Tx) error { return nil },
		func(o *idemlambda.ConsumerOptions[events.CloudWatchEvent]) { o.Scope = "orders-consumer" })
	detail := json.RawMessage(`{"order":"o1"}`)
	if err := handle(context.Background(), events.CloudWatchEvent{ID: "e1", Source: "com.shop.orders", DetailType: "Order/Placed", Detail: detail}); err != nil {
		t.Fatal(err)
	}
	want, err := idem.Fingerprint("EVENT", "com.shop.orders/Order/Placed", detail, false)
	if err != nil || len(got) != 1 || got[0] != want {
		t.Fatalf("fingerprint %q, want %q (%v)", got, want, err)
	}
}
