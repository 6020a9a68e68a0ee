package idem

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/idemkeys/idem/pkg/httpapi"
)

// MaxKeyLength is the longest idempotency key accepted, in bytes. The IETF
// draft leaves the length to the server; 255 is what Stripe accepts and is
// ample for a UUID or a ULID.
const MaxKeyLength = 255

// MaxScopeLength bounds the scope so that the encoded partition key stays
// well inside DynamoDB's 2048-byte limit for a partition key value.
const MaxScopeLength = httpapi.MaxScopeLength

// ValidateKey reports whether key is acceptable as an idempotency key: not
// empty, at most MaxKeyLength bytes, printable ASCII only (0x20 to 0x7E).
// Control characters and non-ASCII bytes are refused rather than normalised,
// because two spellings of "the same" key must not silently become one.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLength {
		return fmt.Errorf("%w: %d bytes, over the limit of %d", ErrInvalidKey, len(key), MaxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: byte 0x%02x at offset %d is not printable ASCII", ErrInvalidKey, c, i)
		}
	}
	return nil
}

// ParseKeyHeader returns the key carried by an Idempotency-Key header value.
// It accepts both a bare token and the IETF draft's form, a Structured Field
// string (a quoted string in which only \" and \\ are escapes), and trims the
// optional white space around it. A bare value with a comma is refused:
// a repeated header arrives joined with commas, and several keys are
// ambiguous (a key with a comma in it travels quoted). The result has passed
// ValidateKey.
func ParseKeyHeader(value string) (string, error) {
	v := strings.Trim(value, " \t")
	if !strings.HasPrefix(v, `"`) && strings.Contains(v, ",") {
		return "", fmt.Errorf("%w: several keys (a repeated header arrives comma-joined); send one, quoted if it holds a comma", ErrInvalidKey)
	}
	if strings.HasPrefix(v, `"`) {
		key, err := parseSFString(v)
		if err != nil {
			return "", err
		}
		v = key
	}
	if err := ValidateKey(v); err != nil {
		return "", err
	}
	return v, nil
}

// parseSFString decodes an RFC 8941 sf-string. Anything after the closing
// quote is refused: a header that carries more than one key is ambiguous.
func parseSFString(v string) (string, error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", fmt.Errorf("%w: bad escape in quoted key", ErrInvalidKey)
			}
			b.WriteByte(v[i])
		case '"':
			if i != len(v)-1 {
				return "", fmt.Errorf("%w: text after the closing quote (several keys?)", ErrInvalidKey)
			}
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: unterminated quoted key", ErrInvalidKey)
}

func validateScope(scope string) error {
	if scope == "" {
		return ErrEmptyScope
	}
	if len(scope) > MaxScopeLength {
		return fmt.Errorf("%w: %d bytes, over the limit of %d", ErrInvalidScope, len(scope), MaxScopeLength)
	}
	return nil
}

// recordPK encodes (scope, key) as the record's partition key. The scope is
// length-prefixed, so the split point is never ambiguous whatever either part
// contains: "a#" + "b" and "a" + "#b" give "2:a#:b" and "1:a:#b".
func recordPK(scope, key string) string {
	return strconv.Itoa(len(scope)) + ":" + scope + ":" + key
}

// KeyHash is a short, stable digest of (scope, key) for logs and metrics, so
// that an operator can correlate lines without the key itself being logged.
func KeyHash(scope, key string) string {
	sum := sha256.Sum256([]byte(recordPK(scope, key)))
	return hex.EncodeToString(sum[:8])
}

// DownstreamKey derives the idempotency key to send to another system (a
// payment provider) on behalf of (scope, key). It is stable across attempts
// and takeovers, so the provider deduplicates a retry after a crash, and it
// differs per scope, so two tenants who pick the same key never collide at the
// provider. The namespace separates different downstream calls made by one
// operation.
func DownstreamKey(namespace, scope, key string) string {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(namespace)) + ":" + namespace + ":"))
	h.Write([]byte(recordPK(scope, key)))
	return hex.EncodeToString(h.Sum(nil))
}
