// Package canonjson writes a JSON document in canonical form: object
// members sorted by key, no insignificant white space, numbers kept as
// their text (1.0 and 1 stay different: the canonical form never guesses at
// a type). It refuses what a strict parser should refuse and a lax one
// would accept differently: invalid UTF-8, duplicate object keys, trailing
// data, and nesting deeper than MaxDepth. Keys equal under the case folding
// encoding/json applies as it matches names to struct fields ("amount" and
// "AMOUNT"; "k" and the Kelvin sign U+212A) are duplicates too: the decoder
// would give both to one field, and which one counts would depend on their
// order, which the canonical form does not keep.
//
// Strings come out as encoding/json writes them (with <, >, &, U+2028 and
// U+2029 escaped, and an unpaired surrogate escape read as U+FFFD), so that
// the canonical form, and every fingerprint made of it, is the one
// encoding/json's decoder and encoder gave before this canonicaliser
// replaced them.
package canonjson

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is how deeply JSON may nest before it is refused. Real request
// bodies nest a handful of levels; a deeper one is an attack on the
// parser's stack or the fingerprint's cost.
const MaxDepth = 32

// Canonical returns the canonical form of body, or why it has none.
func Canonical(body []byte) ([]byte, error) {
	c := canonicalisers.Get().(*canonicaliser)
	defer c.free()
	out, err := c.run(body)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(out), nil
}

// Use passes the canonical form of body to use, which must not keep it:
// the buffer goes back to a pool when use returns. It allocates nothing
// once the pool is warm.
func Use(body []byte, use func(canonical []byte)) error {
	c := canonicalisers.Get().(*canonicaliser)
	defer c.free()
	out, err := c.run(body)
	if err != nil {
		return err
	}
	use(out)
	return nil
}

// UseEncoded is Use for JSON that encoding/json encoded from a value this
// process holds, not a body a client sent: it does not refuse two keys of
// an object that are equal only under case folding ("Env" and "env", two
// AWS tags in one map), which are two keys of the map the JSON came from,
// read by no lax decoder. It still refuses what encoding/json never
// writes, a key twice.
func UseEncoded(body []byte, use func(canonical []byte)) error {
	c := canonicalisers.Get().(*canonicaliser)
	defer c.free()
	c.keepFolded = true
	out, err := c.run(body)
	if err != nil {
		return err
	}
	use(out)
	return nil
}

var errSyntax = errors.New("not a JSON document")

var canonicalisers = sync.Pool{New: func() any { return new(canonicaliser) }}

// run returns the canonical form of body, valid until c is freed.
func (c *canonicaliser) run(body []byte) ([]byte, error) {
	if !utf8.Valid(body) {
		return nil, errors.New("not valid UTF-8")
	}
	c.in, c.pos = body, 0
	c.out, c.keys, c.text, c.scratch, c.members = c.out[:0], c.keys[:0], c.text[:0], c.scratch[:0], c.members[:0]
	if err := c.value(0); err != nil {
		return nil, err
	}
	if c.skipSpace(); c.pos < len(c.in) {
		return nil, errors.New("data after the JSON value")
	}
	return c.out, nil
}

// free returns c to the pool, unless a large body made its buffers large.
func (c *canonicaliser) free() {
	c.in, c.keepFolded = nil, false
	if cap(c.out)+cap(c.keys)+cap(c.text)+cap(c.scratch) > 256<<10 {
		return
	}
	canonicalisers.Put(c)
}

// canonicaliser reads one JSON document from in and writes its canonical
// form to out, in one pass: an object's members are written in their input
// order, then reordered in place once the object ends.
type canonicaliser struct {
	in      []byte
	pos     int
	out     []byte
	keys    []byte   // the decoded keys of the objects being read
	members []member // the members of the objects being read, innermost last
	scratch []byte   // an object's values while they are reordered
	text    []byte   // a string value being decoded
	folded  []member // an object's members in case-folded order

	keepFolded bool // keys equal under case folding are not duplicates (UseEncoded)
}

// member is one object member: its decoded key in keys, its canonical value
// in out.
type member struct {
	keyStart, keyEnd int
	valStart, valEnd int
}

func (c *canonicaliser) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicaliser) value(depth int) error {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return errSyntax
	}
	switch b := c.in[c.pos]; {
	case b == '{' || b == '[':
		if depth >= MaxDepth {
			return fmt.Errorf("nested deeper than %d", MaxDepth)
		}
		c.pos++
		if b == '[' {
			return c.array(depth + 1)
		}
		return c.object(depth + 1)
	case b == '"':
		return c.stringValue()
	case b == '-' || ('0' <= b && b <= '9'):
		return c.number()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if end := c.pos + len(lit); end <= len(c.in) && string(c.in[c.pos:end]) == lit {
				c.pos += len(lit)
				c.out = append(c.out, lit...)
				return nil
			}
		}
		return errSyntax
	}
}

// next skips white space and consumes one byte; 0 at the end.
func (c *canonicaliser) next() byte {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return 0
	}
	c.pos++
	return c.in[c.pos-1]
}

func (c *canonicaliser) array(depth int) error {
	c.out = append(c.out, '[')
	if c.skipSpace(); c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for {
		if err := c.value(depth); err != nil {
			return err
		}
		switch c.next() {
		case ',':
			c.out = append(c.out, ',')
		case ']':
			c.out = append(c.out, ']')
			return nil
		default:
			return errSyntax
		}
	}
}

func (c *canonicaliser) object(depth int) error {
	base, keysBase, start := len(c.members), len(c.keys), len(c.out)
	if c.skipSpace(); c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '{', '}')
		return nil
	}
	for {
		if c.next() != '"' {
			return errSyntax
		}
		m := member{keyStart: len(c.keys)}
		keys, err := c.decodeString(c.keys)
		if err != nil {
			return err
		}
		if c.keys = keys; c.next() != ':' {
			return errSyntax
		}
		m.keyEnd, m.valStart = len(c.keys), len(c.out)
		if err := c.value(depth); err != nil {
			return err
		}
		m.valEnd = len(c.out)
		c.members = append(c.members, m)
		switch c.next() {
		case ',':
		case '}':
			err := c.reorder(c.members[base:], start)
			c.members, c.keys = c.members[:base], c.keys[:keysBase]
			return err
		default:
			return errSyntax
		}
	}
}

// reorder rewrites out[start:], the values of members in input order, as
// the object with its members sorted by key.
func (c *canonicaliser) reorder(members []member, start int) error {
	keys := c.keys
	less := func(a, b member) int { return bytes.Compare(keys[a.keyStart:a.keyEnd], keys[b.keyStart:b.keyEnd]) }
	slices.SortFunc(members, less) // an insertion sort for a handful, pdqsort's O(n log n) past it
	for i := 1; i < len(members); i++ {
		if k := keys[members[i].keyStart:members[i].keyEnd]; bytes.Equal(k, keys[members[i-1].keyStart:members[i-1].keyEnd]) {
			return fmt.Errorf("duplicate object key %q", k)
		}
	}
	if err := c.foldedDuplicate(members); err != nil {
		return err
	}
	c.scratch = append(c.scratch[:0], c.out[start:]...)
	c.out = append(c.out[:start], '{')
	for i, m := range members {
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.out = appendJSONString(c.out, keys[m.keyStart:m.keyEnd])
		c.out = append(c.out, ':')
		c.out = append(c.out, c.scratch[m.valStart-start:m.valEnd-start]...)
	}
	c.out = append(c.out, '}')
	return nil
}

// foldedDuplicate refuses two keys of one object that differ but are equal
// under encoding/json's case folding: sorted in folded order, such keys
// are neighbours.
func (c *canonicaliser) foldedDuplicate(members []member) error {
	keys := c.keys
	if len(members) < 2 || c.keepFolded || !mayFold(keys, members) {
		return nil
	}
	key := func(m member) []byte { return keys[m.keyStart:m.keyEnd] }
	c.folded = append(c.folded[:0], members...)
	slices.SortFunc(c.folded, func(a, b member) int { return compareFolded(key(a), key(b)) })
	for i := 1; i < len(c.folded); i++ {
		if a, b := key(c.folded[i-1]), key(c.folded[i]); compareFolded(a, b) == 0 {
			return fmt.Errorf("duplicate object key: %q and %q are one name to encoding/json, which matches names without regard to case", a, b)
		}
	}
	return nil
}

// mayFold reports whether two of the members' keys may be one name under
// case folding: not when no key holds an upper-case ASCII letter or a byte
// past ASCII, since folding then changes only lower-case letters, each to
// a letter no key holds. Lower-case and snake_case keys skip the sort.
func mayFold(keys []byte, members []member) bool {
	for _, m := range members {
		for _, b := range keys[m.keyStart:m.keyEnd] {
			if 'A' <= b && b <= 'Z' || b >= utf8.RuneSelf {
				return true
			}
		}
	}
	return false
}

// compareFolded orders two keys by their runes folded as encoding/json's
// foldName folds them (a rune to the least of its simple case folding orbit;
// in ASCII, a lower-case letter to its upper case): 0 for two names its
// decoder takes for one. Keys are valid UTF-8.
func compareFolded(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := foldedRune(a)
		rb, nb := foldedRune(b)
		if ra != rb {
			return int(ra) - int(rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// foldedRune is the first rune of s, folded, and its length in s.
func foldedRune(s []byte) (rune, int) {
	if c := s[0]; c < utf8.RuneSelf {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		return rune(c), 1
	}
	r, n := utf8.DecodeRune(s)
	for {
		next := unicode.SimpleFold(r)
		if next <= r {
			return next, n
		}
		r = next
	}
}

// stringValue copies a string that needs no change as it is, and decodes
// and re-encodes any other.
func (c *canonicaliser) stringValue() error {
	c.pos++ // the opening quote
	for i := c.pos; i < len(c.in); i++ {
		switch b := c.in[i]; {
		case b == '"':
			c.out = append(c.out, c.in[c.pos-1:i+1]...)
			c.pos = i + 1
			return nil
		case rewritten[b]:
			text, err := c.decodeString(c.text[:0])
			if err != nil {
				return err
			}
			c.text = text
			c.out = appendJSONString(c.out, text)
			return nil
		}
	}
	return errSyntax
}

// decodeString reads a string's text after its opening quote, up to and
// including its closing quote, and appends the text it stands for to dst,
// as encoding/json's decoder reads it.
func (c *canonicaliser) decodeString(dst []byte) ([]byte, error) {
	for c.pos < len(c.in) {
		run := c.pos
		for run < len(c.in) && c.in[run] >= 0x20 && c.in[run] != '"' && c.in[run] != '\\' {
			run++
		}
		dst, c.pos = append(dst, c.in[c.pos:run]...), run
		if c.pos >= len(c.in) {
			break
		}
		switch c.in[c.pos] {
		case '"':
			c.pos++
			return dst, nil
		case '\\':
		default: // a control character
			return nil, errSyntax
		}
		if c.pos+1 >= len(c.in) {
			return nil, errSyntax
		}
		esc := c.in[c.pos+1]
		c.pos += 2
		if i := strings.IndexByte(`"\/bfnrt`, esc); i >= 0 {
			dst = append(dst, "\"\\/\b\f\n\r\t"[i])
			continue
		}
		if esc != 'u' {
			return nil, errSyntax
		}
		r := c.hex4()
		if r < 0 {
			return nil, errSyntax
		}
		if utf16.IsSurrogate(r) {
			r = c.lowSurrogate(r)
		}
		dst = utf8.AppendRune(dst, r)
	}
	return nil, errSyntax
}

// hex4 reads the four hex digits after \u; -1 if they are not there.
func (c *canonicaliser) hex4() rune {
	if c.pos+4 > len(c.in) {
		return -1
	}
	var r rune
	for _, h := range c.in[c.pos : c.pos+4] {
		switch {
		case '0' <= h && h <= '9':
			h -= '0'
		case 'a' <= h && h <= 'f':
			h -= 'a' - 10
		case 'A' <= h && h <= 'F':
			h -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(h)
	}
	c.pos += 4
	return r
}

// lowSurrogate completes the surrogate pair that high starts, when a \u
// escape of its second half follows; otherwise high stands for U+FFFD and
// what follows is read on its own.
func (c *canonicaliser) lowSurrogate(high rune) rune {
	if c.pos+6 > len(c.in) || c.in[c.pos] != '\\' || c.in[c.pos+1] != 'u' {
		return utf8.RuneError
	}
	save := c.pos
	c.pos += 2
	if r := utf16.DecodeRune(high, c.hex4()); r != utf8.RuneError {
		return r
	}
	c.pos = save
	return utf8.RuneError
}

// number copies a number's text, which must follow JSON's grammar.
func (c *canonicaliser) number() error {
	start := c.pos
	digits := func() int {
		n := 0
		for c.pos < len(c.in) && '0' <= c.in[c.pos] && c.in[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	if c.in[c.pos] == '-' {
		c.pos++
	}
	switch {
	case c.pos < len(c.in) && c.in[c.pos] == '0':
		c.pos++
	case digits() == 0:
		return errSyntax
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		if c.pos++; digits() == 0 {
			return errSyntax
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		if c.pos++; c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return errSyntax
		}
	}
	c.out = append(c.out, c.in[start:c.pos]...)
	return nil
}

// rewritten marks the bytes that a string's canonical form may not copy as
// they are: the escape, control characters, what encoding/json escapes for
// HTML, and 0xE2, the first byte of U+2028 and U+2029. A closing quote is
// found before this is asked.
var rewritten = func() (t [256]bool) {
	for b := range 0x20 {
		t[b] = true
	}
	for _, b := range []byte{'"', '\\', '<', '>', '&', 0xE2} {
		t[b] = true
	}
	return t
}()

// appendJSONString appends s quoted as encoding/json's Marshal quotes a
// string: HTML-safe, with U+2028 and U+2029 escaped. s is valid UTF-8.
func appendJSONString(dst, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !rewritten[b] {
			continue
		}
		lineOrParagraph := b == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9)
		if b == 0xE2 && !lineOrParagraph {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch j := strings.IndexByte("\b\f\n\r\t", b); {
		case b == '"' || b == '\\':
			dst = append(dst, '\\', b)
		case lineOrParagraph:
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[s[i+2]&0xF])
			i += 2
		case j >= 0:
			dst = append(dst, '\\', "bfnrt"[j])
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		}
		start = i + 1
	}
	return append(append(dst, s[start:]...), '"')
}
