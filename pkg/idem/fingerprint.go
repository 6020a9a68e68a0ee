package idem

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/idemkeys/idem/pkg/idem/internal/canonjson"
)

// Fingerprint returns the digest of what makes two requests "the same": the
// method, the route (the request path as it was routed), and the body. JSON
// bodies are hashed in canonical form, so white space and the order of object
// members do not matter; other bodies are hashed as bytes. Which of the two a
// body was is hashed too, so a JSON body and the same bytes sent as text are
// not the same request. A JSON body that a strict parser would refuse or a
// lax one read differently (invalid UTF-8, a duplicate object key, two
// keys equal under the case folding by which encoding/json matches names
// to fields, trailing data, nesting deeper than 32) is refused with
// ErrInvalidBody, so two bodies with one fingerprint decode alike. It
// allocates only its result.
func Fingerprint(method, route string, body []byte, isJSON bool) (string, error) {
	if !isJSON {
		return fingerprint(method, route, body, nil)
	}
	return fingerprint(method, route, body, canonjson.Use)
}

// FingerprintValue is Fingerprint of v as encoding/json encodes it, for a
// value the caller holds decoded (an event, a function's input) rather
// than a body a client sent: two of its map keys that differ only in case
// ("Env" and "env", two AWS tags) are two keys, where Fingerprint refuses
// them in a body that a lax decoder would read as one. Wherever
// Fingerprint accepts v's JSON, the two agree. A v that encoding/json
// cannot encode is ErrInvalidBody.
func FingerprintValue(method, route string, v any) (string, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidBody, err) //nolint:errorlint // ErrInvalidBody is the answer; an error from v's MarshalJSON must not match another sentinel
	}
	return fingerprint(method, route, body, canonjson.UseEncoded)
}

// fingerprint hashes method, route and body, the body raw (canon nil) or
// in canonical JSON.
func fingerprint(method, route string, body []byte, canon func([]byte, func([]byte)) error) (string, error) {
	h := sha256.New()
	// Length prefixes keep the parts from running into each other.
	var prefix [24]byte
	part := func(b []byte) {
		h.Write(append(strconv.AppendInt(prefix[:0], int64(len(b)), 10), ':'))
		h.Write(b)
	}
	part([]byte(strings.ToUpper(method)))
	part([]byte(route))
	if canon == nil {
		part([]byte("raw"))
		part(body)
	} else {
		part([]byte("json"))
		if err := canon(body, part); err != nil {
			return "", fmt.Errorf("%w: %w", ErrInvalidBody, err)
		}
	}
	var sum [sha256.Size]byte
	out := [3 + 2*sha256.Size]byte{'v', '2', ':'}
	hex.Encode(out[3:], h.Sum(sum[:0]))
	return string(out[:]), nil
}
