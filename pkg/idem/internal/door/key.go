package door

import (
	"fmt"
	"strings"

	"github.com/idemkeys/idem/pkg/idem"
)

// ParseKey returns the key carried by an Idempotency-Key header value. It
// accepts both a bare token and the IETF draft's form, an RFC 8941 Item
// whose bare item is a Structured Field string (a quoted string in which
// only \" and \\ are escapes), and trims the optional white space around
// it. The Item's parameters (`"k";v=1`), which the draft defines none of,
// are checked against RFC 8941's grammar and ignored: the key is the
// string. A bare value with a comma is refused: a repeated header arrives
// joined with commas, and several keys are ambiguous (a key with a comma
// in it travels quoted). The result has passed idem.ValidateKey.
func ParseKey(value string) (string, error) {
	v := strings.Trim(value, " \t")
	if !strings.HasPrefix(v, `"`) && strings.Contains(v, ",") {
		return "", fmt.Errorf("%w: several keys (a repeated header arrives comma-joined); send one, quoted if it holds a comma", idem.ErrInvalidKey)
	}
	if strings.HasPrefix(v, `"`) {
		key, n, err := sfString(v)
		if err != nil {
			return "", err
		}
		if err := skipParameters(v[n:]); err != nil {
			return "", err
		}
		v = key
	}
	if err := idem.ValidateKey(v); err != nil {
		return "", err
	}
	return v, nil
}

// sfString decodes the RFC 8941 sf-string at the start of v, and says how
// many bytes it took.
func sfString(v string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", 0, fmt.Errorf("%w: bad escape in quoted key", idem.ErrInvalidKey)
			}
			b.WriteByte(v[i])
		case c == '"':
			return b.String(), i + 1, nil
		case c < 0x20 || c > 0x7e:
			return "", 0, fmt.Errorf("%w: a quoted string holds only printable ASCII", idem.ErrInvalidKey)
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("%w: unterminated quoted key", idem.ErrInvalidKey)
}

// skipParameters checks what follows an Item's bare item against RFC
// 8941's parameters, *( ";" *SP key [ "=" bare-item ] ), and ignores
// them. Anything else is refused: a header that carries more than one key
// ("a", "b") is ambiguous.
func skipParameters(rest string) error {
	for rest != "" {
		if rest[0] != ';' {
			return fmt.Errorf("%w: text after the closing quote (several keys?)", idem.ErrInvalidKey)
		}
		rest = strings.TrimLeft(rest[1:], " ")
		n := paramKeyLen(rest)
		if n == 0 {
			return fmt.Errorf("%w: a parameter without a valid name after the quoted key", idem.ErrInvalidKey)
		}
		rest = rest[n:]
		if rest == "" || rest[0] != '=' {
			continue // a parameter without a value is true
		}
		m := bareItemLen(rest[1:])
		if m == 0 {
			return fmt.Errorf("%w: a parameter without a valid value after the quoted key", idem.ErrInvalidKey)
		}
		rest = rest[1+m:]
	}
	return nil
}

// paramKeyLen is the length of the parameter name at the start of s, 0 if
// none: ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ).
func paramKeyLen(s string) int {
	if s == "" || !isLower(s[0]) && s[0] != '*' {
		return 0
	}
	n := 1
	for n < len(s) && (isLower(s[n]) || isDigit(s[n]) || strings.IndexByte("_-.*", s[n]) >= 0) {
		n++
	}
	return n
}

// bareItemLen is the length of the RFC 8941 bare item at the start of s,
// 0 if there is none: a string, a boolean, a byte sequence, a number or a
// token.
func bareItemLen(s string) int {
	switch {
	case s == "":
		return 0
	case s[0] == '"':
		if _, n, err := sfString(s); err == nil {
			return n
		}
		return 0
	case s[0] == '?':
		if len(s) > 1 && (s[1] == '0' || s[1] == '1') {
			return 2
		}
		return 0
	case s[0] == ':':
		end := strings.IndexByte(s[1:], ':')
		if end < 0 || strings.Trim(s[1:1+end], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != "" {
			return 0
		}
		return end + 2
	case s[0] == '-' || isDigit(s[0]):
		return numberLen(s)
	case isAlpha(s[0]) || s[0] == '*':
		n := 1
		for n < len(s) && (isAlpha(s[n]) || isDigit(s[n]) || strings.IndexByte("!#$%&'*+-.^_`|~:/", s[n]) >= 0) {
			n++
		}
		return n
	}
	return 0
}

// numberLen is the length of the sf-integer (up to 15 digits) or
// sf-decimal (up to 12 digits, a dot, 1 to 3 digits) at the start of s, 0
// if there is none.
func numberLen(s string) int {
	i := 0
	if s[0] == '-' {
		i = 1
	}
	digits := func(from int) int {
		j := from
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		return j - from
	}
	whole := digits(i)
	if whole == 0 {
		return 0
	}
	i += whole
	if i == len(s) || s[i] != '.' {
		if whole > 15 {
			return 0
		}
		return i
	}
	frac := digits(i + 1)
	if whole > 12 || frac == 0 || frac > 3 {
		return 0
	}
	return i + 1 + frac
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isAlpha(c byte) bool { return isLower(c) || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
