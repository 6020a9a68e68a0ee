package canonjson

import "testing"

// TestThePoolKeepsAtMost256KiBOfBuffers: a canonicaliser goes back to the
// pool only while its four buffers together hold at most 256 KiB, so that
// one large body does not leave its buffers pinned in the pool for every
// small request after it. Each buffer counts, alone or with the others.
//
// The pool is observed through its own Get. sync.Pool may drop what it is
// given (the race detector drops a quarter of Puts on purpose, and the
// goroutine may change processors between Put and Get), so a kept
// canonicaliser is looked for over many rounds; a refused one is never
// Put, so no round may find it.
func TestThePoolKeepsAtMost256KiBOfBuffers(t *testing.T) {
	const limit = 256 << 10
	cases := []struct {
		name                     string
		out, keys, text, scratch int // the buffers' capacities
		kept                     bool
	}{
		{"empty", 0, 0, 0, 0, true},
		{"all in out, at the limit", limit, 0, 0, 0, true},
		{"spread over the four, at the limit", limit / 4, limit / 4, limit / 4, limit / 4, true},
		{"spread over the four, one byte each past a quarter", limit/4 + 1, limit/4 + 1, limit/4 + 1, limit/4 + 1, false},
		{"out past the limit", limit + 1, 0, 0, 0, false},
		{"keys past the limit", 0, limit + 1, 0, 0, false},
		{"text past the limit", 0, 0, limit + 1, 0, false},
		{"scratch past the limit", 0, 0, 0, limit + 1, false},
	}
	for _, tc := range cases {
		c := &canonicaliser{
			out:     make([]byte, 0, tc.out),
			keys:    make([]byte, 0, tc.keys),
			text:    make([]byte, 0, tc.text),
			scratch: make([]byte, 0, tc.scratch),
		}
		if got := pooled(c); got != tc.kept {
			t.Errorf("%s: back in the pool %v, want %v", tc.name, got, tc.kept)
		}
	}
}

// pooled frees c and reports whether the pool then hands it out again in
// any of 100 rounds. The pool may hold canonicalisers of other tests, which
// Get can hand out before c: a few Gets a round reach it.
func pooled(c *canonicaliser) bool {
	for range 100 {
		c.free()
		for range 4 {
			if canonicalisers.Get() == c {
				return true
			}
		}
	}
	return false
}
