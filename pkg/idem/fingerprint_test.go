package idem_test

import (
	"errors"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
)

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
		// The same bytes as text are not the JSON request.
		"body mode": func() (string, error) { return idem.Fingerprint("POST", "/orders", []byte(`{"a":1}`), false) },
	} {
		got, err := fp()
		if err != nil || got == base {
			t.Errorf("a different %s gave the same fingerprint (err %v)", name, err)
		}
	}
}

// TestFingerprintAllocations holds the fingerprint of the benchmark's
// 90-byte order body to at most 20 allocations (it took 123 with
// encoding/json's decoder). Allocation counts are exact, so they are
// asserted; its time is only reported, by BenchmarkFingerprint.
func TestFingerprintAllocations(t *testing.T) {
	body := []byte(benchBody)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := idem.Fingerprint("POST", "/orders", body, true); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 20 {
		t.Fatalf("Fingerprint of a %d-byte body: %.0f allocations, want at most 20", len(body), allocs)
	}
	t.Logf("Fingerprint of a %d-byte body: %.0f allocations", len(body), allocs)
}

// TestFingerprintRefusesNamesTheDecoderFolds: encoding/json matches names
// to struct fields without regard to case and keeps the last value, so
// {"amount":5000,…,"AMOUNT":60} in two orders would decode to 60 and to
// 5000 under one fingerprint. Such a body has none: ErrInvalidBody (the
// doors' 400 invalid_json).
func TestFingerprintRefusesNamesTheDecoderFolds(t *testing.T) {
	for _, body := range []string{
		`{"amount":5000,"currency":"eur","AMOUNT":60}`,
		`{"AMOUNT":60,"currency":"eur","amount":5000}`,
		`{"order":{"Id":"o1","iD":"o2"}}`,
		`{"k":1,"\u212a":2}`,
	} {
		if fp, err := idem.Fingerprint("POST", "/orders", []byte(body), true); !errors.Is(err, idem.ErrInvalidBody) {
			t.Errorf("Fingerprint(%s) = %q, %v; want ErrInvalidBody", body, fp, err)
		}
	}
}
