package canonjson_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/idemkeys/idem/pkg/idem/internal/canonjson"
)

// TestEveryTruncationOfADocumentIsRefused: a body cut short anywhere (in
// a key, in a string's plain text, inside a \u escape, between the two
// halves of a surrogate pair, or right after the last escape) is refused,
// never read past its end, while the whole body has its canonical form.
// No proper prefix of an object, an array or a string is a JSON document,
// so every one must be refused.
func TestEveryTruncationOfADocumentIsRefused(t *testing.T) {
	cases := []struct {
		whole, want string
	}{
		{`{"key":"text"}`, `{"key":"text"}`},
		{`{"k\u00e9y":"a\nb"}`, `{"kéy":"a\nb"}`},
		{`"\u00e9"`, `"é"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`["\ud83d\ude00x"]`, `["😀x"]`},
		{`{"\ud83d\ude00":"\u2028"}`, `{"😀":"\u2028"}`},
		{`"\ud83dx"`, `"` + "\ufffd" + `x"`},
	}
	for _, tc := range cases {
		got, err := canonjson.Canonical([]byte(tc.whole))
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tc.whole, got, err, tc.want)
		}
		for n := range len(tc.whole) {
			if got, err := canonjson.Canonical([]byte(tc.whole[:n])); err == nil {
				t.Errorf("Canonical(%q), %q cut to %d bytes: %q, want a refusal", tc.whole[:n], tc.whole, n, got)
			}
		}
	}
}

// TestNamesEqualButForCaseAreRefusedWhereverTheySort: the case-folded
// duplicate check sorts the names by their folded runes so that two names
// the decoder takes for one are neighbours. That holds only if the folded
// order is a true order, runes compared by value and a name after its own
// prefix; here the two names are not neighbours in byte order (another
// name, or a longer name sharing their prefix, falls between them), so a
// comparison that got either wrong would let the pair through.
func TestNamesEqualButForCaseAreRefusedWhereverTheySort(t *testing.T) {
	cases := []struct {
		body string
		a, b string // the two names that fold to one
	}{
		{`{"a":1,"B":2,"A":3}`, "A", "a"},
		{`{"z":1,"a":2,"Z":3}`, "Z", "z"},
		{`{"A":1,"AB":2,"a":3}`, "A", "a"},
		{`{"id":1,"ID":2,"IDs":3}`, "ID", "id"},
		{`{"É":1,"Éa":2,"é":3}`, "É", "é"},
		{`{"k":1,"kk":2,"\u212a":3}`, "k", "\u212a"},
	}
	for _, tc := range cases {
		got, err := canonjson.Canonical([]byte(tc.body))
		if err == nil {
			t.Errorf("Canonical(%s) = %q, want a refusal of %q and %q", tc.body, got, tc.a, tc.b)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, strconv.Quote(tc.a)) || !strings.Contains(msg, strconv.Quote(tc.b)) {
			t.Errorf("Canonical(%s): %v; want it to name %q and %q", tc.body, err, tc.a, tc.b)
		}
	}
}

// TestNamesSharingAPrefixAreOrderedByCodePoint: names that are not one
// name under case folding are kept, however much of them is shared, and
// sorted by code point (a name before the longer names it begins), so
// that the fingerprint does not depend on the order the client wrote
// them in. Upper-case letters and runes past ASCII make the canonicaliser
// compare the names folded too, a name against its own prefix among them.
func TestNamesSharingAPrefixAreOrderedByCodePoint(t *testing.T) {
	cases := []struct {
		body, want string
	}{
		{`{"IDs":1,"ID":2,"I":3}`, `{"I":3,"ID":2,"IDs":1}`},
		{`{"Ab":1,"A":2}`, `{"A":2,"Ab":1}`},
		{`{"éa":1,"é":2,"z":3,"e":4}`, `{"e":4,"z":3,"é":2,"éa":1}`},
		{`{"Z":1,"[":2,"@":3,"A":4}`, `{"@":3,"A":4,"Z":1,"[":2}`},
	}
	for _, tc := range cases {
		got, err := canonjson.Canonical([]byte(tc.body))
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%s) = %q, %v; want %q", tc.body, got, err, tc.want)
		}
	}
}
