package measure

import "testing"

func TestMedianLeavesItsInputAlone(t *testing.T) {
	xs := []float64{3, 1, 2}
	if got := Median(xs); got != 2 {
		t.Fatalf("Median = %v, want 2", got)
	}
	if xs[0] != 3 || xs[1] != 1 {
		t.Fatalf("Median reordered its input: %v", xs)
	}
	if got := Median([]int{4, 1, 3, 2}); got != 3 {
		t.Fatalf("Median of an even count = %v, want the upper middle 3", got)
	}
}

func TestSpread(t *testing.T) {
	if got, want := Spread([]float64{1.1, 0.9, 1.0}), "1.00 (0.90–1.10)"; got != want {
		t.Fatalf("Spread = %q, want %q", got, want)
	}
}

func TestEnvInt(t *testing.T) {
	for v, want := range map[string]int{"": 7, "12": 12, "0": 7, "-3": 7, "x": 7} {
		t.Setenv("MEASURE_N", v)
		if got := EnvInt("MEASURE_N", 7); got != want {
			t.Errorf("EnvInt with %q = %d, want %d", v, got, want)
		}
	}
}

func TestPairedRatioIsTheTypicalPairNotTheTail(t *testing.T) {
	// b is a's time plus 10% on every pair but one, where a pause of 100
	// lands on a alone: the ratio of the sides' means (or of their
	// medians taken apart) reads the pause, the paired median does not.
	a := []int64{10, 20, 30, 40, 150}
	b := []int64{11, 22, 33, 44, 55}
	if got := PairedRatio(a, b); got < 0.90 || got > 0.92 {
		t.Fatalf("PairedRatio = %v, want 1/1.1", got)
	}
	if got := PairedRatio([]int64{0, 5}, []int64{3, 0}); got != 0 {
		t.Fatalf("PairedRatio with no pair measured on both sides = %v, want 0", got)
	}
}
