package devstack_test

import (
	"crypto/rand"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/devstack"
)

// A double click on a busy machine: 30 requests under one Idempotency-Key
// at once through the local stack (the JWT authorizer, the charge's
// bootstrap under the Runtime Interface Emulator, DynamoDB Local, the
// provider simulator), while every core is kept busy besides, round after
// round. Each request is answered as Lambda and API Gateway would answer
// it, 201 for the charge or its replay and 409 for a request that found it
// in progress, never a 500; and each key charges once.
func TestADoubleClickOnABusyMachineAnswersOnly201And409(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and loads every core")
	}
	s := startStack(t, "click-", devstack.Options{})
	tok := tokenFor(t, s, "user-click")
	stop := busy(runtime.NumCPU() * 2)
	defer stop()
	const rounds, clicks = 4, 30
	answers := map[int]int{}
	for round := range rounds {
		key := "click-" + strings.ToLower(rand.Text())
		var mu sync.Mutex
		var wg sync.WaitGroup
		created := map[string]bool{}
		for range clicks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, body := post(s.APIURL, tok, key, `{"amount":1050,"currency":"usd","payment_method":"pm_card_visa"}`, 90*time.Second)
				mu.Lock()
				defer mu.Unlock()
				answers[status]++
				switch status {
				case 201:
					created[body] = true
				case 409:
				default:
					t.Errorf("round %d: %d %s, want 201 or 409", round, status, body)
				}
			}()
		}
		wg.Wait()
		if len(created) != 1 {
			t.Errorf("round %d: %d different 201 bodies, want the one charge and its replays", round, len(created))
		}
		if n := len(s.Sim.Effects()); n != round+1 {
			t.Fatalf("after round %d: %d charges, want one per key", round, n)
		}
	}
	t.Logf("%d rounds of %d clicks on %d busy cores: %v", rounds, clicks, runtime.NumCPU(), answers)
}

// busy keeps n goroutines spinning until stop is called.
func busy(n int) (stop func()) {
	done := make(chan struct{})
	for range n {
		go func() {
			x := 0
			for {
				select {
				case <-done:
					_ = fmt.Sprint(x)
					return
				default:
					for i := range 1 << 16 {
						x += i
					}
				}
			}
		}()
	}
	return func() { close(done) }
}
