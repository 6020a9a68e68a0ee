package idem_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
)

func TestParseKeyHeader(t *testing.T) {
	cases := []struct {
		header string
		want   string // "" means an error
	}{
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{"  padded\t", "padded"},
		{`"with \"quote\" and \\ slash"`, `with "quote" and \ slash`},
		{`"a#b:c"`, "a#b:c"},
		{strings.Repeat("k", 255), strings.Repeat("k", 255)},
		{"", ""},
		{`""`, ""},
		{"   ", ""},
		{strings.Repeat("k", 256), ""},
		{"bad\x00null", ""},
		{"tab\tinside", ""},
		{"del\x7f", ""},
		{"ünïcode", ""},
		{`"unterminated`, ""},
		{`"bad \n escape"`, ""},
		{`"two" "keys"`, ""},
		// A repeated header arrives comma-joined: several keys are a 400.
		{"k1,k2", ""},
		{"k1, k1", ""},
		{`"k1", "k2"`, ""},
		{`"a,b"`, "a,b"}, // one key with a comma travels quoted
	}
	for _, tc := range cases {
		got, err := idem.ParseKeyHeader(tc.header)
		if tc.want == "" {
			if !errors.Is(err, idem.ErrInvalidKey) {
				t.Errorf("ParseKeyHeader(%q) = %q, %v; want ErrInvalidKey", tc.header, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseKeyHeader(%q) = %q, %v; want %q", tc.header, got, err, tc.want)
		}
	}
}

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
