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
//	file | mutator | the source line, trimmed | why it cannot be killed
//
// Lines that are empty or start with # are comments. An entry names the
// line's text, not its number, so that an edit elsewhere in the file does
// not unhook it, and an edit of the line itself does: the mutant is then
// reported again, to be argued again.
type equivalents map[string]string

func readEquivalents(name string) (equivalents, error) {
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return equivalents{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	eq := equivalents{}
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
		eq[parts[0]+"\x00"+parts[1]+"\x00"+parts[2]] = parts[3]
	}
	return eq, s.Err()
}

func (eq equivalents) reason(file, kind, source string) string {
	return eq[file+"\x00"+kind+"\x00"+source]
}
