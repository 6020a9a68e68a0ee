package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/idemkeys/idem/local/proc"
	"github.com/idemkeys/idem/local/template"
)

var stripeMockBin = sync.OnceValues(func() (string, error) {
	root, err := template.ProjectDir()
	if err != nil {
		return "", err
	}
	// go tool -n builds the pinned stripe-mock once (into Go's build
	// cache) and prints where it is.
	out, err := exec.Command("go", "-C", filepath.Join(root, "tools"), "tool", "-n", "stripe-mock").Output()
	if err != nil {
		return "", fmt.Errorf("building stripe-mock (tools/go.mod): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
})

// stripeMock starts stripe-mock, pinned in tools/go.mod, on a free
// loopback port (HTTP only), and returns its base URL. It answers every
// request from Stripe's published API description, refusing with 400 any
// that the description does not allow; it keeps no state.
func stripeMock(t *testing.T) string {
	t.Helper()
	bin, err := stripeMockBin()
	if err != nil {
		t.Fatal(err)
	}
	port, err := proc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var out proc.Output
	cmd := exec.Command(bin, "-http-addr", addr)
	cmd.SysProcAttr, cmd.Stdout, cmd.Stderr = proc.Attr(), &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // it keeps nothing to lose
		_ = cmd.Wait()         // killed: its exit status says so
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close() // only the listener was wanted
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("stripe-mock never listened on %s: %s", addr, out.String())
		}
	}
}

// TestProviderRequestsAreWhatStripeAccepts sends each kind of request the
// charge makes, through its own provider client and with the parameters
// it builds, to stripe-mock, which holds each to Stripe's published API
// description: the create-and-confirm of a PaymentIntent (a saved method
// of a customer's, off session, and a bare token) with its downstream
// Idempotency-Key, description and metadata; the list settlement reads,
// by creation time and customer; and the retrievals of an intent, a
// customer and a payment method. stripe-mock models no state, idempotency
// or faults: local/provider's simulator holds those.
func TestProviderRequestsAreWhatStripeAccepts(t *testing.T) {
	ctx := context.Background()
	p := newStripeClient(stripeMock(t), "sk_test_123", slog.New(slog.NewTextHandler(io.Discard, nil)), nil, 10*time.Second)
	req := chargeRequest{Amount: "1050", Currency: "usd", Description: "tea", Metadata: map[string]string{"order": "o-1"}}
	for name, who := range map[string]payer{
		"a token":                   {paymentMethod: "pm_card_visa"},
		"a customer's saved method": {paymentMethod: "pm_123", customer: "cus_123", offSession: true},
	} {
		params := intentParams(intent{req: req, amount: 1050, who: who, downstream: "down-" + strings.ReplaceAll(name, " ", "-"), op: "op-1", request: "fp-1", gen: 1})
		if _, err := p.CreatePaymentIntent(ctx, params); err != nil {
			t.Errorf("create and confirm, %s: %v", name, err)
		}
	}
	now := time.Now().Unix()
	for _, customer := range []string{"", "cus_123"} {
		for _, err := range p.ListPaymentIntents(ctx, now-3600, now, customer) {
			if err != nil {
				t.Errorf("list, customer %q: %v", customer, err)
				break
			}
		}
	}
	if _, err := p.PaymentIntent(ctx, "pi_123"); err != nil {
		t.Errorf("retrieve an intent: %v", err)
	}
	if _, err := p.Customer(ctx, "cus_123"); err != nil {
		t.Errorf("retrieve a customer: %v", err)
	}
	if _, err := p.PaymentMethod(ctx, "pm_123"); err != nil {
		t.Errorf("retrieve a payment method: %v", err)
	}
	// The negative control: a parameter Stripe's description refuses is
	// refused here, so a pass above means something.
	bad := intentParams(intent{req: req, amount: 1050, who: payer{paymentMethod: "pm_card_visa"}, downstream: "down-bad", op: "op-1", request: "fp-1", gen: 1})
	bad.AutomaticPaymentMethods.AllowRedirects = stripe.String("sometimes")
	if _, err := p.CreatePaymentIntent(ctx, bad); err == nil {
		t.Error("stripe-mock took allow_redirects=sometimes, which Stripe's description refuses")
	}
}
