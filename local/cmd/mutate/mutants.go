package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// mutant is one entry of the protocol list (local/mutate/protocol.txt): the
// change a reviewer would make to break one guarantee, and the packages
// whose tests must notice it.
//
//	mutant fence-token
//	guarantee: a holder whose lease was taken over commits nothing
//	kill: ./pkg/idem
//	equivalent: why no test can tell (optional: the run then needs no kill)
//	file: pkg/idem/complete.go
//	-		ConditionExpression:                 exprLease,
//	+		ConditionExpression:                 aws.String("#status = :in_progress"),
//
// After each file: line come the lines of the text to replace, each
// behind a "-", then those of its replacement, each behind a "+" (none:
// the text is removed), as in a unified diff: the rest of the line is the
// source's line to the byte, tabs included. An entry may have several
// file: blocks, applied in order, on one file or more. Lines that are empty
// or start with # are comments.
type mutant struct {
	name, guarantee, equivalent string
	kill                        []string // packages, as go test takes them
	edits                       []edit
	line                        int // where the entry starts in the list
}

// edit replaces old, which must stand exactly once in file, by new.
type edit struct {
	file, old, new string
}

var mutantName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// list is the parser's state: the entries so far, the one being read, and
// the edit being read (nil outside a file: block).
type list struct {
	name    string
	mutants []mutant
	cur     *mutant
	ed      *edit
	plus    bool // the edit's replacement has begun
}

// parseMutants reads the protocol list from r, named name in its errors.
func parseMutants(name string, r io.Reader) ([]mutant, error) {
	l := &list{name: name}
	s := bufio.NewScanner(r)
	for n := 1; s.Scan(); n++ {
		if err := l.line(n, s.Text()); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if err := l.end(); err != nil {
		return nil, err
	}
	return l.mutants, nil
}

// line takes line n of the list.
func (l *list) line(n int, text string) error {
	if l.ed != nil && (strings.HasPrefix(text, "-") || strings.HasPrefix(text, "+")) {
		return l.diffLine(text)
	}
	l.endEdit()
	if text == "" || strings.HasPrefix(text, "#") {
		return nil
	}
	if name, ok := strings.CutPrefix(text, "mutant "); ok {
		if err := l.end(); err != nil {
			return err
		}
		l.cur = &mutant{name: strings.TrimSpace(name), line: n}
		return nil
	}
	key, value, ok := strings.Cut(text, ":")
	value = strings.TrimSpace(value)
	switch {
	case l.cur == nil:
		return fmt.Errorf("%q before the first mutant line", text)
	case !ok || value == "":
		return fmt.Errorf("want key: value, got %q", text)
	}
	return l.field(key, value)
}

// field sets one key of the current entry.
func (l *list) field(key, value string) error {
	m := l.cur
	switch key {
	case "guarantee":
		m.guarantee = value
	case "equivalent":
		m.equivalent = value
	case "kill":
		m.kill = strings.Fields(value)
	case "file":
		m.edits = append(m.edits, edit{file: value})
		l.ed, l.plus = &m.edits[len(m.edits)-1], false
	default:
		return fmt.Errorf("unknown key %q (want guarantee, kill, equivalent or file)", key)
	}
	return nil
}

// diffLine adds a "-" or "+" line to the edit being read.
func (l *list) diffLine(text string) error {
	sign, rest := text[0], text[1:]
	switch {
	case sign == '-' && l.plus:
		return fmt.Errorf("a - line after the + lines of %s: start another file: block", l.ed.file)
	case sign == '-':
		l.ed.old = join(l.ed.old, rest)
	default:
		if !l.plus {
			l.plus, l.ed.new = true, rest
			return nil
		}
		l.ed.new += "\n" + rest
	}
	return nil
}

func join(text, line string) string {
	if text == "" {
		return line
	}
	return text + "\n" + line
}

func (l *list) endEdit() { l.ed = nil }

// end closes the current entry, checked.
func (l *list) end() error {
	l.endEdit()
	m := l.cur
	if m == nil {
		return nil
	}
	l.cur = nil
	if err := m.check(l.mutants); err != nil {
		return fmt.Errorf("%s:%d: mutant %s: %w", l.name, m.line, m.name, err)
	}
	l.mutants = append(l.mutants, *m)
	return nil
}

// check holds an entry to the list's rules, against those before it.
func (m *mutant) check(before []mutant) error {
	switch {
	case !mutantName.MatchString(m.name):
		return fmt.Errorf("a name is lower case letters, digits and dashes")
	case m.guarantee == "":
		return fmt.Errorf("no guarantee: line")
	case len(m.kill) == 0:
		return fmt.Errorf("no kill: line (the packages whose tests must kill it)")
	case len(m.edits) == 0:
		return fmt.Errorf("no file: block")
	}
	for _, e := range m.edits {
		if strings.TrimSpace(e.old) == "" {
			return fmt.Errorf("%s: no text to replace (- lines)", e.file)
		}
	}
	for _, b := range before {
		if b.name == m.name {
			return fmt.Errorf("the name is taken by the entry at line %d", b.line)
		}
	}
	return nil
}

// mutated returns the files m changes, as m leaves them, read through
// read. Each edit's text must stand exactly once in its file as the edits
// before it left it: so that the list stays tied to the code, a change of
// that text, or a second copy of it, stops the run rather than mutating
// something else.
func (m mutant) mutated(read func(file string) ([]byte, error)) (map[string]string, error) {
	files := map[string]string{}
	for _, e := range m.edits {
		text, ok := files[e.file]
		if !ok {
			b, err := read(e.file)
			if err != nil {
				return nil, fmt.Errorf("mutant %s: %w", m.name, err)
			}
			text = string(b)
		}
		if n := strings.Count(text, e.old); n != 1 {
			return nil, fmt.Errorf("mutant %s: %s: the text to replace stands %d times, want exactly once:\n%s", m.name, e.file, n, e.old)
		}
		files[e.file] = strings.Replace(text, e.old, e.new, 1)
	}
	return files, nil
}
