package idem

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxKeyLength is the longest idempotency key accepted, in bytes. The IETF
// draft leaves the length to the server; 255 is what Stripe accepts and is
// ample for a UUID or a ULID.
const MaxKeyLength = 255

// MaxScopeLength is the longest scope accepted, in bytes: the encoded
// partition key stays well inside DynamoDB's 2048-byte limit.
const MaxScopeLength = 1024

// ValidateKey reports whether key is acceptable as an idempotency key: not
// empty, at most MaxKeyLength bytes, printable ASCII only (0x20 to 0x7E).
// Control characters and non-ASCII bytes are refused rather than normalised,
// because two spellings of "the same" key must not silently become one.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLength {
		return &LimitError{What: "key (bytes)", Size: len(key), Limit: MaxKeyLength, Err: ErrInvalidKey}
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: byte 0x%02x at offset %d is not printable ASCII", ErrInvalidKey, c, i)
		}
	}
	return nil
}

// validateScope refuses a scope that cannot name a record of its own: empty,
// over MaxScopeLength, or not valid UTF-8. The SDK writes each byte of a
// string attribute that is not UTF-8 as U+FFFD, so two such scopes that
// differ only there ("m\xfcller", "m\xf6ller", Latin-1 names) would share
// one record, and each get the other's stored response.
func validateScope(scope string) error {
	if scope == "" {
		return fmt.Errorf("%w: empty", ErrInvalidScope)
	}
	if len(scope) > MaxScopeLength {
		return &LimitError{What: "scope (bytes)", Size: len(scope), Limit: MaxScopeLength, Err: ErrInvalidScope}
	}
	if !utf8.ValidString(scope) {
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidScope)
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
