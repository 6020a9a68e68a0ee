package idem_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
)

func TestCanonicalJSON(t *testing.T) {
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
		got, err := idem.CanonicalJSON([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("CanonicalJSON(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestCanonicalJSONRefusesAmbiguousInput(t *testing.T) {
	cases := map[string]string{
		"duplicate key":        `{"a":1,"a":2}`,
		"nested duplicate key": `{"x":{"a":1,"b":2,"a":3}}`,
		"trailing data":        `{"a":1} {"b":2}`,
		"invalid UTF-8":        "{\"a\":\"\xff\"}",
		"too deep":             strings.Repeat("[", idem.MaxJSONDepth+1) + strings.Repeat("]", idem.MaxJSONDepth+1),
		"not JSON":             `amount=100`,
		"empty":                ``,
		"unterminated":         `{"a":`,
	}
	for name, in := range cases {
		if _, err := idem.CanonicalJSON([]byte(in)); !errors.Is(err, idem.ErrInvalidBody) {
			t.Errorf("%s: err = %v, want ErrInvalidBody", name, err)
		}
	}
	ok := strings.Repeat("[", idem.MaxJSONDepth) + strings.Repeat("]", idem.MaxJSONDepth)
	if _, err := idem.CanonicalJSON([]byte(ok)); err != nil {
		t.Errorf("depth %d refused: %v", idem.MaxJSONDepth, err)
	}
}

func TestFingerprintSeparatesRequests(t *testing.T) {
	base, _ := idem.Fingerprint("POST", "/orders", []byte(`{"a":1}`), true)
	same, _ := idem.Fingerprint("post", "/orders", []byte(`{ "a" : 1 }`), true)
	if base != same {
		t.Fatal("white space or method case changed the fingerprint")
	}
	for name, fp := range map[string]func() (string, error){
		"method": func() (string, error) { return idem.Fingerprint("PUT", "/orders", []byte(`{"a":1}`), true) },
		"route":  func() (string, error) { return idem.Fingerprint("POST", "/orders/1", []byte(`{"a":1}`), true) },
		"body":   func() (string, error) { return idem.Fingerprint("POST", "/orders", []byte(`{"a":2}`), true) },
		"split":  func() (string, error) { return idem.Fingerprint("POST", "/orders{", []byte(`"a":1}`), false) },
	} {
		got, err := fp()
		if err != nil || got == base {
			t.Errorf("a different %s gave the same fingerprint (err %v)", name, err)
		}
	}
}
