package canonjson_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
)

// order is what a handler might decode a body into: fields whose names
// fold onto each other ("amount" and "Amount"), onto the Kelvin sign and
// the long s ("k", "s"), nested and repeated structs, and values of any
// shape.
type order struct {
	Amount    int64          `json:"amount"`
	AmountAlt int64          `json:"Amount"`
	Currency  string         `json:"currency"`
	K         any            `json:"k"`
	S         any            `json:"s"`
	Number    json.Number    `json:"n"`
	Items     []item         `json:"items"`
	Meta      map[string]any `json:"meta"`
	Nested    *order         `json:"nested"`
	Any       any            `json:"any"`
}

type item struct {
	SKU string `json:"sku"`
	Qty int    `json:"Qty"`
	ID  any    `json:"id"`
}

// decodeOrder is what json.Unmarshal makes of body: the value, and
// whether it failed (which of several type errors it names depends on
// the order of the members, whether there is one does not).
func decodeOrder(body []byte) (order, bool) {
	var o order
	err := json.Unmarshal(body, &o)
	return o, err == nil
}

// FuzzOneFingerprintOneDecoding: no two bodies with one fingerprint decode
// to different values of the same struct. It checks the two bodies it is
// given, and the first against another spelling of it (its objects'
// members in another order, its keys escaped otherwise, other white
// space), which must have its fingerprint.
func FuzzOneFingerprintOneDecoding(f *testing.F) {
	for _, s := range [][2]string{
		{`{"amount":5000,"currency":"eur","AMOUNT":60}`, `{"AMOUNT":60,"currency":"eur","amount":5000}`},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`},
		{`{"k":1,"\u212a":2}`, `{"\u212a":2,"k":1}`},
		{`{"s":"x","ſ":"y"}`, `{"ſ":"y","s":"x"}`},
		{`{"items":[{"sku":"tea","Qty":2,"qty":3}]}`, `{"items":[{"qty":3,"sku":"tea","Qty":2}]}`},
		{`{"nested":{"Amount":1,"amount":2},"n":1.0}`, `{"n":1.0,"nested":{"amount":2,"Amount":1}}`},
		{`{"meta":{"A":1,"a":2},"any":{"x":[1,{"y":null}]}}`, `{"any":{"x":[1,{"y":null}]},"meta":{"a":2,"A":1}}`},
		{`{"amount":"x","currency":7}`, `{"currency":7,"amount":"x"}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), uint64(1))
	}
	f.Fuzz(func(t *testing.T, a, b []byte, seed uint64) {
		fa, err := idem.Fingerprint("POST", "/orders", a, true)
		if err != nil {
			return
		}
		if fb, err := idem.Fingerprint("POST", "/orders", b, true); err == nil && fa == fb {
			sameDecoding(t, a, b)
		}
		other, err := respell(a, seed)
		if err != nil {
			t.Fatalf("respell(%q): %v", a, err)
		}
		if fo, err := idem.Fingerprint("POST", "/orders", other, true); err != nil || fo != fa {
			t.Fatalf("%q spelt %q: fingerprint %q, %v; want %q", a, other, fo, err, fa)
		}
		sameDecoding(t, a, other)
	})
}

func sameDecoding(t *testing.T, a, b []byte) {
	t.Helper()
	oa, okA := decodeOrder(a)
	ob, okB := decodeOrder(b)
	if okA != okB || !reflect.DeepEqual(oa, ob) {
		t.Fatalf("one fingerprint, two decodings:\n%q -> %+v (ok %v)\n%q -> %+v (ok %v)", a, oa, okA, b, ob, okB)
	}
}

// respell writes body again as another spelling of the same JSON: each
// object's members in an order drawn from seed, some letters of keys as
// \u escapes, a space after each separator.
func respell(body []byte, seed uint64) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return respellValue(dec, rand.New(rand.NewPCG(seed, seed>>32)))
}

func respellValue(dec *json.Decoder, rng *rand.Rand) ([]byte, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	var parts [][]byte
	switch t := tok.(type) {
	case json.Delim:
		for dec.More() {
			var part []byte
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				part = append(escapeLetters(k.(string), rng), ": "...)
			}
			v, err := respellValue(dec, rng)
			if err != nil {
				return nil, err
			}
			parts = append(parts, append(part, v...))
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		if t == '{' {
			rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
			return append(append([]byte("{"), bytes.Join(parts, []byte(", "))...), '}'), nil
		}
		return append(append([]byte("["), bytes.Join(parts, []byte(", "))...), ']'), nil
	case string:
		return json.Marshal(t)
	case json.Number:
		return []byte(t.String()), nil
	default: // bool, nil
		return json.Marshal(t)
	}
}

// escapeLetters quotes s as encoding/json does, then writes some of its
// ASCII letters as \u escapes.
func escapeLetters(s string, rng *rand.Rand) []byte {
	q, _ := json.Marshal(s)
	out := make([]byte, 0, 2*len(q))
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\\' && q[i+1] == 'u':
			out, i = append(out, q[i:i+6]...), i+5
		case c == '\\':
			out, i = append(out, q[i:i+2]...), i+1
		case ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') && rng.IntN(3) == 0:
			out = fmt.Appendf(out, `\u%04x`, c)
		default:
			out = append(out, c)
		}
	}
	return out
}
