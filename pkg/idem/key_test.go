package idem_test

import (
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
)

func TestRecordKeyIsInjective(t *testing.T) {
	pairs := [][2]string{
		{"a#", "b"}, {"a", "#b"}, {"a:", "b"}, {"a", ":b"}, {"1:a", "b"}, {"1", "a:b"},
		{"ab", "c"}, {"a", "bc"}, {"10:", "x"}, {"1", "0::x"},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		pk := idem.RecordPK(p[0], p[1])
		if other, dup := seen[pk]; dup {
			t.Fatalf("%v and %v share pk %q", p, other, pk)
		}
		seen[pk] = p
	}
}

func TestDownstreamKeyIsStableAndScoped(t *testing.T) {
	a := idem.DownstreamKey("charge", "alice", "k1")
	if a != idem.DownstreamKey("charge", "alice", "k1") {
		t.Fatal("not stable")
	}
	for _, other := range []string{
		idem.DownstreamKey("charge", "bob", "k1"),
		idem.DownstreamKey("refund", "alice", "k1"),
		idem.DownstreamKey("charge", "alice", "k2"),
	} {
		if other == a {
			t.Fatal("two different operations share a downstream key")
		}
	}
	if len(a) > 255 {
		t.Fatalf("downstream key is %d characters, over what providers accept", len(a))
	}
}
