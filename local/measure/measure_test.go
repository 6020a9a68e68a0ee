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
