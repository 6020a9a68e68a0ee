package canonjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idemkeys/idem/pkg/idem/internal/canonjson"
)

func TestCanonical(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{" {\n\"a\" : [ 1 , {\"z\":null,\"y\":true} ] } ", `{"a":[1,{"y":true,"z":null}]}`},
		{`"\u00e9"`, `"é"`},
		{`1.0`, `1.0`},
		{`[]`, `[]`},
		{`{}`, `{}`},
	}
	for _, tc := range cases {
		got, err := canonjson.Canonical([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestCanonicalRefusesAmbiguousInput(t *testing.T) {
	cases := map[string]string{
		"duplicate key":        `{"a":1,"a":2}`,
		"nested duplicate key": `{"x":{"a":1,"b":2,"a":3}}`,
		"case-folded key":      `{"amount":5000,"currency":"eur","AMOUNT":60}`,
		"Kelvin sign key":      `{"k":1,"\u212a":2}`,
		"trailing data":        `{"a":1} {"b":2}`,
		"invalid UTF-8":        "{\"a\":\"\xff\"}",
		"too deep":             strings.Repeat("[", canonjson.MaxDepth+1) + strings.Repeat("]", canonjson.MaxDepth+1),
		"not JSON":             `amount=100`,
		"empty":                ``,
		"unterminated":         `{"a":`,
	}
	for name, in := range cases {
		if _, err := canonjson.Canonical([]byte(in)); err == nil {
			t.Errorf("%s: accepted, want a refusal", name)
		}
	}
	ok := strings.Repeat("[", canonjson.MaxDepth) + strings.Repeat("]", canonjson.MaxDepth)
	if _, err := canonjson.Canonical([]byte(ok)); err != nil {
		t.Errorf("depth %d refused: %v", canonjson.MaxDepth, err)
	}
}

// TestCanonicalMatchesOld holds the canonicaliser to the one it
// replaced (oldCanonicalJSON, encoding/json's decoder and encoder, with
// the refusal of case-folded duplicate names added since) on the fuzz
// seeds: the same canonical form, and a refusal exactly where it refused.
// FuzzCanonicalMatchesOld searches further.
func TestCanonicalMatchesOld(t *testing.T) {
	for _, in := range canonicalSeeds {
		sameAsOld(t, []byte(in))
	}
}

// TestCanonicalMatchesOldOnEveryRune: every code point, raw and as a
// \u escape (surrogates in pairs and alone), comes out of both
// canonicalisers the same, in strings and in keys.
func TestCanonicalMatchesOldOnEveryRune(t *testing.T) {
	const block = 1 << 14
	for lo := rune(0); lo <= utf8.MaxRune; lo += block {
		var raw, escaped strings.Builder
		raw.WriteString(`{"k":["`)
		escaped.WriteString(`["`)
		for r := lo; r < lo+block && r <= utf8.MaxRune; r++ {
			if r >= 0x20 && r != '"' && r != '\\' && utf8.ValidRune(r) {
				raw.WriteRune(r)
			}
			fmt.Fprintf(&escaped, `\u%04X`, r)
			if r > 0xFFFF {
				r1, r2 := utf16Pair(r)
				fmt.Fprintf(&escaped, `\u%04x\u%04x`, r1, r2)
			}
		}
		raw.WriteString(`"], "`)
		raw.WriteString(strings.TrimPrefix(escaped.String(), `["`))
		raw.WriteString(`":1}`)
		escaped.WriteString(`", "\uDC00\uD800", "\uD800x", "\uD800\u0041"]`)
		sameAsOld(t, []byte(raw.String()))
		sameAsOld(t, []byte(escaped.String()))
	}
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

// sameAsOld fails unless both canonicalisers give the same form, or both
// refuse.
func sameAsOld(t *testing.T, in []byte) {
	t.Helper()
	want, wantErr := oldCanonicalJSON(in)
	got, err := canonjson.Canonical(in)
	if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("Canonical(%.200q) = %.200q, %v; the old canonicaliser gave %.200q, %v", in, got, err, want, wantErr)
	}
}

// canonicalSeeds are the fuzz targets' seeds: the grammar's edges, every
// escape, the strings encoding/json re-escapes, and the refusals, among
// them a \u escape of fewer than four digits whose string closes within
// the document's last four bytes.
var errOld = errors.New("invalid")

var canonicalSeeds = []string{
	`{"b":1,"a":[true,null,"x"]}`, `{"a":1,"a":2}`, `[[[[[]]]]]`, "\"\xff\"", `{"a":"\u0000"}`, `1e400`, ` {} `, `{"":{}}`,
	`{"items":[{"sku":"tea","quantity":2},{"sku":"cake","quantity":1}],"note":"green, no sugar"}`, `{"z":{"y":{"x":[1,{"b":2,"a":1}]}},"a":"<b>&amp;</b>"}`,
	`{"a":1,"\u0061":2}`, `{"\u00e9":1,"é":2}`, `{"b":1,"a":2,"b":3}`, `{"a":{"a":1},"b":{"a":1,"a":1}}`,
	`"\"\\\/\b\f\n\r\t"`, `"\u2028\u2029    – ☃"`, `"\ud83d\ude00 😀"`, `"\uD800"`, `"\uDC00\uD800"`, `"\uD800\uD800\uDC00"`,
	`"\u00zz"`, `"\u1"`, `"\u12"`, `{"a":"\u1"}`, `["\u12"]`, `"\ud83d\u1"`, `"\x"`, `"\`, `"abc`, "\"a\tb\"", "\"a\x7fb\"", `"<>&'"`,
	`0`, `-0`, `-0.0e-0`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `1.5E+10`, `123456789012345678901234567890`, `-1x`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`, `True`, `[true,false,null]`,
	`[1,]`, `[,1]`, `[1 2]`, `{"a" 1}`, `{"a":}`, `{"a":1,}`, `{,}`, `{1:2}`, `{"a":1}}`, `[1]]`, `]`, `}`, `{`, `[`,
	`{"a":1} {"b":2}`, `{} x`, "{}\n\t\r ", "\ufeff{}", `{"a":1}` + "\x00", ``, ` `,
	strings.Repeat("[", canonjson.MaxDepth) + strings.Repeat("]", canonjson.MaxDepth),
	strings.Repeat("[", canonjson.MaxDepth+1) + strings.Repeat("]", canonjson.MaxDepth+1),
	strings.Repeat(`{"a":`, canonjson.MaxDepth) + `1` + strings.Repeat("}", canonjson.MaxDepth),
	strings.Repeat(`{"a":`, canonjson.MaxDepth+1) + `1` + strings.Repeat("}", canonjson.MaxDepth+1),
	manyMembers(40), `{"0":{"`, `{"a":{"b":"\x"}}`, `[{"a":1},{"a":2,"a":3}]`,
	`{"amount":5000,"currency":"eur","AMOUNT":60}`, `{"k":1,"\u212a":2}`, `{"s":1,"ſ":2}`, `{"É":1,"é":2}`, `{"ß":1,"ss":2}`,
	`{"a":{"Id":1,"iD":2}}`, `{"id":1,"ID":1}`, `{"Ǆ":1,"ǅ":2,"ǆ":3}`, `{"ab":1,"aB":2,"b":3}`, `{"k":1,"kk":2,"K":3}`,
}

func manyMembers(n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = `"k` + strconv.Itoa((i*17)%n) + `":` + strconv.Itoa(i)
	}
	slices.Reverse(keys)
	return "{" + strings.Join(keys, ",") + "}"
}

// oldCanonicalJSON is the canonicaliser Fingerprint used before, on
// encoding/json's decoder (14 µs and 123 allocations for the 90-byte
// benchmark body): kept as the reference the new one must equal. It
// refuses names equal under case folding (strings.EqualFold, which
// encoding/json's foldName is documented to match), as the new one does
// since: a body that had a fingerprint still has the same one, or none.
func oldCanonicalJSON(body []byte) ([]byte, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("%w: not valid UTF-8", errOld)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(body))
	if err := oldCanonicalValue(dec, &out, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the JSON value", errOld)
	}
	return out.Bytes(), nil
}

func oldCanonicalValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", errOld, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= canonjson.MaxDepth {
			return fmt.Errorf("%w: nested deeper than %d", errOld, canonjson.MaxDepth)
		}
		if t == '[' {
			return oldCanonicalArray(dec, out, depth+1)
		}
		return oldCanonicalObject(dec, out, depth+1)
	case string:
		oldWriteJSONString(out, t)
	case json.Number:
		out.WriteString(t.String())
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case nil:
		out.WriteString("null")
	}
	return nil
}

func oldCanonicalArray(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	out.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			out.WriteByte(',')
		}
		if err := oldCanonicalValue(dec, out, depth); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return fmt.Errorf("%w: %v", errOld, err)
	}
	out.WriteByte(']')
	return nil
}

func oldCanonicalObject(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	type member struct {
		key   string
		value []byte
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", errOld, err)
		}
		key := tok.(string) // the decoder only yields strings in key position
		var v bytes.Buffer
		if err := oldCanonicalValue(dec, &v, depth); err != nil {
			return err
		}
		members = append(members, member{key, v.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return fmt.Errorf("%w: %v", errOld, err)
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	// Names equal under encoding/json's case folding are one field's name
	// to its decoder: refused too (the canonical form's one change of
	// meaning since it replaced this one).
	for i := range members {
		for j := range i {
			if members[i].key != members[j].key && strings.EqualFold(members[i].key, members[j].key) {
				return fmt.Errorf("%w: keys %q and %q fold to one name", errOld, members[j].key, members[i].key)
			}
		}
	}
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			if m.key == members[i-1].key {
				return fmt.Errorf("%w: duplicate object key %q", errOld, m.key)
			}
			out.WriteByte(',')
		}
		oldWriteJSONString(out, m.key)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

func oldWriteJSONString(out *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	out.Write(b)
}

// FuzzCanonical: canonicalisation never panics, and what it returns is
// valid JSON that is its own
// canonical form (so equal fingerprints mean equal canonical bodies).
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `{"a":1,"a":2}`, `[[[[[]]]]]`, "\"\xff\"", `{"a":"\u0000"}`, `1e400`, ` {} `, `{"":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := canonjson.Canonical(body)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form %q of %q is not JSON", c, body)
		}
		again, err := canonjson.Canonical(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("canonical form is not stable: %q -> %q (%v)", c, again, err)
		}
	})
}

// FuzzCanonicalMatchesOld: the canonicaliser gives exactly what the one
// it replaced gave (oldCanonicalJSON, on encoding/json), form for form and
// refusal for refusal, so that no stored fingerprint changes meaning.
func FuzzCanonicalMatchesOld(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsOld(t, body)
	})
}
