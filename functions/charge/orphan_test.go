package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// The orphaned charge of core v2's finding (b), end to end: the provider
// charged, then every answer timed out, so the work failed. The key stays
// bound to the request (its lease lapsed, not deleted): another body under
// it gets 422 and never reaches the provider, and the original request's
// retry gets 201 with the original charge, one charge at the provider and
// one charge record. With the old release-as-delete, the other body bound
// the key, its 422 from the provider was stored, and the original request's
// retries got that 422 forever, the customer charged and no record of it.
func TestChargedThenTimedOutIsNeverOrphaned(t *testing.T) {
	f := newFixture(t)
	// Every attempt the payments client makes (stripe-go retries too) charges or
	// replays, then loses its answer.
	f.sim.Inject(provider.Fault{Kind: provider.DropAfterEffect, Times: 20})
	failed := f.call("POST", "/charges", "alice", "k-1", visa)
	if failed.StatusCode < 500 || failed.Headers["Retry-After"] == "" {
		t.Fatalf("first attempt = %d %s, want a 5xx with Retry-After", failed.StatusCode, failed.Body)
	}
	f.sim.ClearFaults()
	effects := f.sim.Effects()
	if len(effects) != 1 {
		t.Fatalf("provider effects after the timeout = %d, want 1 (charged, answer lost)", len(effects))
	}

	other := f.call("POST", "/charges", "alice", "k-1", strings.Replace(visa, "1050", "9999", 1))
	if other.StatusCode != 422 || errorCode(t, other) != "idempotency_key_reused" {
		t.Fatalf("another body under the key = %d %s, want 422", other.StatusCode, other.Body)
	}

	retry := f.call("POST", "/charges", "alice", "k-1", visa)
	var ch charge
	if err := json.Unmarshal([]byte(retry.Body), &ch); err != nil || retry.StatusCode != 201 || retry.Headers[idemlambda.HeaderReplayed] != "" {
		t.Fatalf("the original request's retry = %d %s, want a fresh 201", retry.StatusCode, retry.Body)
	}
	if effects = f.sim.Effects(); len(effects) != 1 || effects[0].PaymentIntentID != ch.ID {
		t.Fatalf("provider effects = %+v, charge %s: want the one charge, answered", effects, ch.ID)
	}
	if n := f.charges(); n != 1 {
		t.Fatalf("charge records = %d, want 1", n)
	}
	replay := f.call("POST", "/charges", "alice", "k-1", visa)
	if replay.StatusCode != 201 || replay.Body != retry.Body || replay.Headers[idemlambda.HeaderReplayed] != "true" {
		t.Fatalf("replay = %d %s, want the charge replayed", replay.StatusCode, replay.Body)
	}
}
