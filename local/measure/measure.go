// Package measure holds the small statistics the benchmarks and load runs
// share: the median of a few rounds, a ratio with its spread, and sizes
// read from the environment.
package measure

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
)

// Median is the middle value of xs (the upper one of an even count); xs is
// not reordered. It panics on an empty slice, which is a bug in the caller.
func Median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// Spread renders ratios as "median (min–max)", the form of every ratio
// column in BENCHMARKS.md.
func Spread(rs []float64) string {
	return fmt.Sprintf("%.2f (%.2f–%.2f)", Median(rs), slices.Min(rs), slices.Max(rs))
}

// EnvInt is the positive integer in the environment variable name, or def
// when it is unset, unparsable or not positive.
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
