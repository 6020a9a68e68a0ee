package main

import (
	"sync"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/provider"
)

// Reading a pending charge does not spend the provider's budget: fifty
// GETs of one processing charge over ten seconds (the clock moved 200 ms
// between them) make at most one provider read per refreshEvery, and still
// see the payment settle once it has; fifty GETs at one instant make one.
func TestReadingAPendingChargeSpendsLittleOfTheProvidersBudget(t *testing.T) {
	f := newFixture(t)
	t.Run("one after another", func(t *testing.T) {
		ch := charged(t, f.call("POST", "/charges", "alice", "k-1", body(provider.Processing)))
		id := f.sim.Effects()[len(f.sim.Effects())-1].PaymentIntentID
		before := f.requests.Load()
		var last charge
		settledAt := -1
		for i := range 50 {
			if i == 20 {
				if err := f.sim.Resolve(id, true); err != nil {
					t.Fatal(err)
				}
			}
			last = charged(t, f.call("GET", "/charges/"+ch.ID, "alice", "", ""))
			if last.Status == "succeeded" && settledAt < 0 {
				settledAt = i
			}
			f.clock.add(200 * time.Millisecond)
		}
		reads := f.requests.Load() - before
		if reads < 1 || reads > 2 {
			t.Errorf("50 GETs over 10 s made %d provider reads, want one per %v at most (the create's answer counting as one)", reads, refreshEvery)
		}
		if last.Status != "succeeded" || settledAt < 20 || settledAt > 20+int(refreshEvery/(200*time.Millisecond)) {
			t.Errorf("the GETs saw the settlement at GET %d (status at the end %q); want it within %v of GET 20", settledAt, last.Status, refreshEvery)
		}
	})
	t.Run("at one instant", func(t *testing.T) {
		ch := charged(t, f.call("POST", "/charges", "alice", "k-2", body(provider.Processing)))
		id := f.sim.Effects()[len(f.sim.Effects())-1].PaymentIntentID
		if err := f.sim.Resolve(id, true); err != nil {
			t.Fatal(err)
		}
		f.clock.add(refreshEvery)
		before := f.requests.Load()
		var wg sync.WaitGroup
		statuses := make([]string, 50)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = charged(t, f.call("GET", "/charges/"+ch.ID, "alice", "", "")).Status
			}()
		}
		wg.Wait()
		if reads := f.requests.Load() - before; reads != 1 {
			t.Errorf("50 GETs at once made %d provider reads, want 1", reads)
		}
		if got := charged(t, f.call("GET", "/charges/"+ch.ID, "alice", "", "")); got.Status != "succeeded" {
			t.Errorf("after them the charge is %q, want the settlement one of them read", got.Status)
		}
		for _, s := range statuses {
			if s != "processing" && s != "succeeded" {
				t.Errorf("a GET answered %q", s)
			}
		}
	})
}
