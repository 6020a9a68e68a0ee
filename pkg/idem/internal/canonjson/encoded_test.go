package canonjson_test

import (
	"testing"

	"github.com/idemkeys/idem/pkg/idem/internal/canonjson"
)

// JSON that encoding/json encoded from a map holds keys that differ only in
// case as two keys: UseEncoded keeps both, in order, where Use refuses them
// in a body; a key twice, which encoding/json never writes, both refuse.
func TestEncodedJSONKeepsKeysThatDifferOnlyInCase(t *testing.T) {
	var got string
	if err := canonjson.UseEncoded([]byte(`{"env":"dev","Env":"prod"}`), func(c []byte) { got = string(c) }); err != nil || got != `{"Env":"prod","env":"dev"}` {
		t.Errorf("UseEncoded: %s, %v; want both keys, sorted", got, err)
	}
	if err := canonjson.Use([]byte(`{"env":"dev","Env":"prod"}`), func([]byte) {}); err == nil {
		t.Error("Use accepted two keys equal under case folding in a body")
	}
	if err := canonjson.UseEncoded([]byte(`{"env":"dev","env":"prod"}`), func([]byte) {}); err == nil {
		t.Error("UseEncoded accepted a key twice")
	}
	// The pool's canonicaliser does not carry UseEncoded's mode into Use.
	for range 3 {
		_ = canonjson.UseEncoded([]byte(`{"a":{"K":1,"k":2}}`), func([]byte) {})
		if err := canonjson.Use([]byte(`{"K":1,"k":2}`), func([]byte) {}); err == nil {
			t.Fatal("Use after UseEncoded accepted two keys equal under case folding")
		}
	}
}
