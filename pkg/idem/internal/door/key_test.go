package door_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/internal/door"
)

func TestParseKey(t *testing.T) {
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
		// An RFC 8941 Item may carry parameters: the key is the string.
		{`"k";v=1`, "k"},
		{`"k";a;b=?0`, "k"},
		{`"k"; a=1;  b=-1.5`, "k"},
		{`"k";v="x;y,z"`, "k"},
		{`"k";v=:aGk=:`, "k"},
		{`"k";v=tok/en:1`, "k"},
		{`"k";*v.1_x-y=*t`, "k"},
		{`"k";`, ""},
		{`"k";V=1`, ""},
		{`"k";1v=1`, ""},
		{`"k";v=`, ""},
		{`"k";v=1 x`, ""},
		{`"k" ;v=1`, ""},
		{`"k";v="open`, ""},
		{`"k";v=?2`, ""},
		{`"k";v=:not base64!:`, ""},
		{`"k";v=1.2345`, ""},
		{`"k";v=1234567890123456`, ""},
		{`"k";v=1,"j"`, ""},
		{`"k";v="\x"`, ""},
		{"\"k\";v=\"\x01\"", ""},
	}
	for _, tc := range cases {
		got, err := idemhttp.ParseKey(tc.header)
		if tc.want == "" {
			if !errors.Is(err, idem.ErrInvalidKey) {
				t.Errorf("ParseKey(%q) = %q, %v; want ErrInvalidKey", tc.header, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q", tc.header, got, err, tc.want)
		}
	}
}

// The engine's header names are idemhttp's, the ones the doors document.
func TestHeaderNamesAreIdemhttps(t *testing.T) {
	if door.HeaderIdempotencyKey != idemhttp.HeaderIdempotencyKey || door.HeaderReplayed != idemhttp.HeaderReplayed {
		t.Fatalf("door's headers %q %q, idemhttp's %q %q", door.HeaderIdempotencyKey, door.HeaderReplayed, idemhttp.HeaderIdempotencyKey, idemhttp.HeaderReplayed)
	}
}

// TestHeaderNamesAreDeclaredOncePerSide: the header names are written out
// in one place for the server (door, which idemhttp exports) and one for
// the client (idemclient); every other file of the library refers to them.
func TestHeaderNamesAreDeclaredOncePerSide(t *testing.T) {
	var found []string
	err := filepath.WalkDir(filepath.Join("..", "..", ".."), func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return err
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		for _, h := range []string{`"Idempotency-Key"`, `"Idempotent-Replayed"`} {
			if bytes.Contains(b, []byte(h)) {
				found = append(found, filepath.ToSlash(name)+" "+h)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`../../../idem/internal/door/door.go "Idempotency-Key"`, `../../../idem/internal/door/door.go "Idempotent-Replayed"`,
		`../../../idemclient/transport.go "Idempotency-Key"`, `../../../idemclient/transport.go "Idempotent-Replayed"`,
	}
	if !slices.Equal(found, want) {
		t.Fatalf("the header names are written out in %q, want %q", found, want)
	}
}
