package canonjson_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/idemkeys/idem/pkg/idem/internal/canonjson"
)

// validTag is encoding/json's rule for a name in a struct tag; a field
// with any other tag is named by its Go identifier, which is letters and
// digits too.
func validTag(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return s != ""
}

// decoderMatches reports whether encoding/json's decoder gives the member
// named key to a struct field named field: what makes two names one.
func decoderMatches(t *testing.T, key, field string) bool {
	t.Helper()
	typ := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[int](), Tag: reflect.StructTag(`json:"` + field + `"`)}})
	v := reflect.New(typ)
	body, _ := json.Marshal(map[string]int{key: 1})
	if err := json.Unmarshal(body, v.Interface()); err != nil {
		t.Fatal(err)
	}
	return v.Elem().Field(0).Int() == 1
}

// TestCanonicalRefusesNamesTheDecoderFolds: two names of one object that
// are equal under case folding are refused, and two that are not are kept,
// on a table of names and on every rune whose case folding orbit holds
// more than itself (the Kelvin sign and "k", the long s and "s" among
// them). Where both could name a struct field, the decoder itself says
// which are one: it matches a member to a field by that folding.
func TestCanonicalRefusesNamesTheDecoderFolds(t *testing.T) {
	pairs := [][2]string{
		{"amount", "AMOUNT"}, {"amount", "Amount"}, {"orderId", "orderid"}, {"k", "\u212a"}, {"K", "\u212a"},
		{"s", "\u017f"}, {"é", "É"}, {"ß", "ss"}, {"ß", "ẞ"}, {"a", "b"}, {"amount", "amounts"}, {"id", "ID"},
		{"ǅ", "ǆ"}, {"ı", "i"}, {"İ", "i"}, {"σ", "ς"}, {"Σ", "ς"}, {"µ", "μ"}, {"a_b", "A_B"}, {"a-b", "a_b"},
	}
	for r := rune(0x41); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) || !unicode.IsPrint(r) {
			continue
		}
		if f := unicode.SimpleFold(r); f != r {
			pairs = append(pairs, [2]string{string(r), string(f)})
		}
	}
	decoded := 0
	for _, p := range pairs {
		if p[0] == p[1] {
			continue
		}
		body := `{` + strconv.Quote(p[0]) + `:1,` + strconv.Quote(p[1]) + `:2}`
		_, err := canonjson.Canonical([]byte(body))
		one := strings.EqualFold(p[0], p[1])
		if validTag(p[0]) && validTag(p[1]) {
			if d := decoderMatches(t, p[0], p[1]); d != one || d != decoderMatches(t, p[1], p[0]) {
				t.Fatalf("the decoder matches %q and %q: %v; strings.EqualFold: %v", p[0], p[1], d, one)
			}
			decoded++
		}
		if (err != nil) != one {
			t.Fatalf("Canonical(%s): %v; the two names fold to one: %v", body, err, one)
		}
	}
	if decoded < 2000 {
		t.Fatalf("only %d pairs checked against the decoder", decoded)
	}
}
