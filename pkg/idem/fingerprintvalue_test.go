package idem_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
)

// FingerprintValue is Fingerprint of the value's JSON wherever Fingerprint
// accepts it, so that a fingerprint made either way matches a record made
// the other.
func TestFingerprintValueAgreesWithFingerprint(t *testing.T) {
	type order struct {
		ID    string            `json:"id"`
		Items []string          `json:"items"`
		Tags  map[string]string `json:"tags"`
	}
	for _, v := range []any{
		order{ID: "o1", Items: []string{"tea"}, Tags: map[string]string{"env": "prod", "team": "shop"}},
		map[string]any{"b": 1, "a": []any{true, nil, "<&>"}},
		"text", 42.5, nil,
	} {
		body, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := idem.Fingerprint("FUNCTION", "orders", body, true)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := idem.FingerprintValue("FUNCTION", "orders", v); err != nil || got != want {
			t.Errorf("%#v: FingerprintValue %s, %v; want Fingerprint's %s", v, got, err, want)
		}
	}
}

// Map keys that differ only in case ("Env" and "env", two AWS tags) are
// two keys of a value: FingerprintValue takes them, and tells which holds
// what, where Fingerprint refuses them in a body.
func TestFingerprintValueKeepsMapKeysThatDifferOnlyInCase(t *testing.T) {
	a, errA := idem.FingerprintValue("FUNCTION", "orders", map[string]string{"Env": "prod", "env": "dev"})
	b, errB := idem.FingerprintValue("FUNCTION", "orders", map[string]string{"Env": "dev", "env": "prod"})
	if errA != nil || errB != nil || a == b {
		t.Fatalf("FingerprintValue: %s, %v and %s, %v; want two fingerprints", a, errA, b, errB)
	}
	if _, err := idem.Fingerprint("POST", "/orders", []byte(`{"Env":"prod","env":"dev"}`), true); !errors.Is(err, idem.ErrInvalidBody) {
		t.Fatalf("Fingerprint of the body: %v, want ErrInvalidBody", err)
	}
	if _, err := idem.FingerprintValue("FUNCTION", "orders", math.Inf(1)); !errors.Is(err, idem.ErrInvalidBody) {
		t.Fatalf("a value JSON cannot hold: %v, want ErrInvalidBody", err)
	}
}
