package idem

import (
	"testing"
	"time"
)

type discard struct{}

func (discard) Observe(Outcome, time.Duration) {}

func TestObserveAllocatesNothing(t *testing.T) {
	for name, m := range map[string]Metrics{"no Metrics": nil, "a Metrics": discard{}} {
		c := &call{s: &Store{opts: Options{Clock: time.Now, Metrics: m}}, leaseFrom: time.Now().UnixMilli()}
		if n := testing.AllocsPerRun(100, func() { c.observe(OutcomeExecuted) }); n != 0 {
			t.Errorf("%s: observe allocates %.0f times per call, want 0", name, n)
		}
	}
}
