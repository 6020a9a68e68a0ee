package idem

import (
	"testing"
	"time"
)

// The pause before a conflicting write's next send is jittered around its
// base, which doubles each attempt: half the base at least, one and a half
// at most, never nothing (a resend at once would meet the same transaction
// in flight).
func TestBackoffStaysWithinItsJitter(t *testing.T) {
	for attempt := range 4 {
		base := 10 * time.Millisecond << attempt
		for range 1000 {
			if d := backoff(attempt); d < base/2 || d >= base*3/2 {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v)", attempt, d, base/2, base*3/2)
			}
		}
	}
}
