package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
)

// equivalents are go-gremlins' mutants of the protocol files argued to
// change nothing a test could see, one per entry of the equivalents file:
//
//	file | mutator | the source line, trimmed, its operator marked | why it cannot be killed
//
// Lines that are empty or start with # are comments. An entry names the
// line's text, not its number, so that an edit elsewhere in the file does
// not unhook it, and an edit of the line itself does: the mutant is then
// reported again, to be argued again. The line's operator that the mutant
// changes is marked, ⟦<=⟧, as the report prints it: an entry argues one
// mutant, never each of its line's operators that one mutator changes.
type equivalents struct {
	file    string
	entries []*equivalent
}

type equivalent struct {
	line               int // in the equivalents file
	file, kind, source string
	reason             string
	matched            []string // the mutants it was read for, where each is
	made               int      // the mutants go-gremlins made at its line and operator, whatever became of them
}

// argues says whether the entry argues the one mutant it was read for: it
// matched one living mutant, and go-gremlins made no other like it.
func (e *equivalent) argues() bool { return len(e.matched) == 1 && e.made <= 1 }

func readEquivalents(name string) (*equivalents, error) {
	eq := &equivalents{file: name}
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return eq, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, " | ")
		if len(parts) != 4 || parts[3] == "" {
			return nil, fmt.Errorf("%s:%d: want file | mutator | source line | reason, got %q", name, n, line)
		}
		if strings.Count(parts[2], "⟦") != 1 || strings.Count(parts[2], "⟧") != 1 {
			return nil, fmt.Errorf("%s:%d: mark the operator the mutant changes, as the report prints it (if d ⟦<=⟧ 0 {), in %q", name, n, parts[2])
		}
		eq.entries = append(eq.entries, &equivalent{line: n, file: parts[0], kind: parts[1], source: parts[2], reason: parts[3]})
	}
	return eq, s.Err()
}

// find is the entry that argues a mutant of file, of kind, at source (its
// line, marked), or nil.
func (eq *equivalents) find(file, kind, source string) *equivalent {
	for _, e := range eq.entries {
		if e.key() == mutantKey(file, kind, source) {
			return e
		}
	}
	return nil
}

// argue is find, noting that the entry was read for the mutant at where.
func (eq *equivalents) argue(file, kind, source, where string) *equivalent {
	e := eq.find(file, kind, source)
	if e != nil {
		e.matched = append(e.matched, where)
	}
	return e
}

// mutantKey names a mutant as an entry does: its file, its mutator, its
// line with the operator marked.
func mutantKey(file, kind, source string) string { return file + "\x00" + kind + "\x00" + source }

func (e *equivalent) key() string { return mutantKey(e.file, e.kind, e.source) }

// faults are the entries that argue nothing as they should, among those
// of the files mutated: one whose mutant go-gremlins made more than once,
// whatever became of each (identical lines: the entry could argue one
// when its reason was written for the other), one that no living mutant
// matched (its mutant is killed now, or its line changed), and one that
// matched more than one. made counts the mutants made, by file, mutator
// and marked line.
func (eq *equivalents) faults(mutated map[string]bool, made map[string]int) []string {
	var out []string
	for _, e := range eq.entries {
		e.made = made[e.key()]
		switch {
		case !mutated[e.file]:
		case e.made > 1:
			out = append(out, fmt.Sprintf("%s:%d names a mutant that go-gremlins made %d times (identical lines), and an entry argues one: make the lines differ",
				eq.file, e.line, e.made))
		case len(e.matched) == 0:
			out = append(out, fmt.Sprintf("%s:%d argues a mutant that did not live (killed now, or its line changed): %s %s: %s",
				eq.file, e.line, e.file, e.kind, e.source))
		case len(e.matched) > 1:
			out = append(out, fmt.Sprintf("%s:%d matches %d mutants (%s), and an entry argues one: make the lines differ",
				eq.file, e.line, len(e.matched), strings.Join(e.matched, ", ")))
		}
	}
	return out
}
