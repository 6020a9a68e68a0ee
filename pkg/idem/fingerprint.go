package idem

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxJSONDepth is how deeply JSON may nest before CanonicalJSON refuses it.
// Real request bodies nest a handful of levels; a deeper one is an attack on
// the parser's stack or the fingerprint's cost.
const MaxJSONDepth = 32

// Fingerprint returns the digest of what makes two requests "the same": the
// method, the route (the request path as it was routed), and the body. JSON
// bodies are hashed in canonical form, so white space and the order of object
// members do not matter; other bodies are hashed as bytes. A JSON body that
// cannot be canonicalised is refused with ErrInvalidBody.
func Fingerprint(method, route string, body []byte, isJSON bool) (string, error) {
	if isJSON {
		c, err := CanonicalJSON(body)
		if err != nil {
			return "", err
		}
		body = c
	}
	h := sha256.New()
	// Length prefixes keep the three parts from running into each other.
	for _, part := range [][]byte{[]byte(strings.ToUpper(method)), []byte(route), body} {
		h.Write([]byte(strconv.Itoa(len(part)) + ":"))
		h.Write(part)
	}
	return "v1:" + hex.EncodeToString(h.Sum(nil)), nil
}

// CanonicalJSON re-encodes a JSON document with object members sorted by key
// and no insignificant white space. Numbers keep their text (1.0 and 1 stay
// different: the canonical form never guesses at a type). It refuses, with
// ErrInvalidBody, what a strict parser should refuse and a lax one would
// accept differently: invalid UTF-8, duplicate object keys, trailing data,
// and nesting deeper than MaxJSONDepth.
func CanonicalJSON(body []byte) ([]byte, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrInvalidBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(body))
	if err := canonicalValue(dec, &out, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the JSON value", ErrInvalidBody)
	}
	return out.Bytes(), nil
}

func canonicalValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidBody, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= MaxJSONDepth {
			return fmt.Errorf("%w: nested deeper than %d", ErrInvalidBody, MaxJSONDepth)
		}
		if t == '[' {
			return canonicalArray(dec, out, depth+1)
		}
		return canonicalObject(dec, out, depth+1)
	case string:
		writeJSONString(out, t)
	case json.Number:
		out.WriteString(t.String())
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case nil:
		out.WriteString("null")
	}
	return nil
}

func canonicalArray(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	out.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			out.WriteByte(',')
		}
		if err := canonicalValue(dec, out, depth); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return fmt.Errorf("%w: %v", ErrInvalidBody, err)
	}
	out.WriteByte(']')
	return nil
}

func canonicalObject(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	type member struct {
		key   string
		value []byte
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidBody, err)
		}
		key := tok.(string) // the decoder only yields strings in key position
		var v bytes.Buffer
		if err := canonicalValue(dec, &v, depth); err != nil {
			return err
		}
		members = append(members, member{key, v.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return fmt.Errorf("%w: %v", ErrInvalidBody, err)
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			if m.key == members[i-1].key {
				return fmt.Errorf("%w: duplicate object key %q", ErrInvalidBody, m.key)
			}
			out.WriteByte(',')
		}
		writeJSONString(out, m.key)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

func writeJSONString(out *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	out.Write(b)
}
