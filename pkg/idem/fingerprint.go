package idem

import (
	"crypto/sha256"
	"encoding/hex"
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
	h := sha256.New()
	// Length prefixes keep the parts from running into each other.
	var prefix [24]byte
	part := func(b []byte) {
		h.Write(append(strconv.AppendInt(prefix[:0], int64(len(b)), 10), ':'))
		h.Write(b)
	}
	part([]byte(strings.ToUpper(method)))
	part([]byte(route))
	if !isJSON {
		part([]byte("raw"))
		part(body)
	} else {
		part([]byte("json"))
		if err := canonjson.Use(body, part); err != nil {
			return "", fmt.Errorf("%w: %w", ErrInvalidBody, err)
		}
	}
	var sum [sha256.Size]byte
	out := [3 + 2*sha256.Size]byte{'v', '2', ':'}
	hex.Encode(out[3:], h.Sum(sum[:0]))
	return string(out[:]), nil
}
