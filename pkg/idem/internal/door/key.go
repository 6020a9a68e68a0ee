package door

import (
	"fmt"
	"strings"

	"github.com/idemkeys/idem/pkg/idem"
)

// ParseKey returns the key carried by an Idempotency-Key header value. It
// accepts both a bare token and the IETF draft's form, a Structured Field
// string (a quoted string in which only \" and \\ are escapes), and trims
// the optional white space around it. A bare value with a comma is refused:
// a repeated header arrives joined with commas, and several keys are
// ambiguous (a key with a comma in it travels quoted). The result has
// passed idem.ValidateKey.
func ParseKey(value string) (string, error) {
	v := strings.Trim(value, " \t")
	if !strings.HasPrefix(v, `"`) && strings.Contains(v, ",") {
		return "", fmt.Errorf("%w: several keys (a repeated header arrives comma-joined); send one, quoted if it holds a comma", idem.ErrInvalidKey)
	}
	if strings.HasPrefix(v, `"`) {
		key, err := parseSFString(v)
		if err != nil {
			return "", err
		}
		v = key
	}
	if err := idem.ValidateKey(v); err != nil {
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
				return "", fmt.Errorf("%w: bad escape in quoted key", idem.ErrInvalidKey)
			}
			b.WriteByte(v[i])
		case '"':
			if i != len(v)-1 {
				return "", fmt.Errorf("%w: text after the closing quote (several keys?)", idem.ErrInvalidKey)
			}
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: unterminated quoted key", idem.ErrInvalidKey)
}
