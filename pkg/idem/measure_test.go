package idem_test

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
)

// The small statistics of this package's measurements (cost, floor, tracing
// cost): the median of a few rounds, a ratio with its spread, the paired
// ratio of two ways measured request by request, sizes from the environment.

// median is the middle value of xs (the upper one of an even count); xs is
// not reordered. It panics on an empty slice, which is a bug in the caller.
func median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// spread renders ratios as "median (min–max)".
func spread(rs []float64) string {
	return fmt.Sprintf("%.2f (%.2f–%.2f)", median(rs), slices.Min(rs), slices.Max(rs))
}

// envInt is the positive integer in the environment variable name, or def
// when it is unset, unparsable or not positive.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// pairedRatio is the median over i of a[i]/b[i], skipping pairs where
// either is zero: the typical ratio of one request's cost on a to the same
// request's on b, for two ways measured request by request side by side. A
// pause that lands on one side of a pair moves that pair's ratio, not the
// median, as it would move a median taken of each side apart.
func pairedRatio[T ~int64](a, b []T) float64 {
	rs := make([]float64, 0, min(len(a), len(b)))
	for i := range min(len(a), len(b)) {
		if a[i] > 0 && b[i] > 0 {
			rs = append(rs, float64(a[i])/float64(b[i]))
		}
	}
	if len(rs) == 0 {
		return 0
	}
	return median(rs)
}
