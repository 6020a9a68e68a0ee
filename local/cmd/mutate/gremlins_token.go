package main

import (
	"fmt"
	"slices"
	"strings"
)

// mutatorFlags are go-gremlins' flags that switch on the mutators swaps
// knows, and off every other: the runner marks and applies those alone,
// so that neither a .gremlins.yaml nor a later default can add one.
func mutatorFlags() []string {
	flags := []string{"--invert-assignments=false", "--invert-bitwise=false", "--invert-bwassign=false",
		"--invert-logical=false", "--invert-loopctrl=false", "--remove-self-assignments=false"}
	for kind := range swaps {
		flags = append(flags, "--"+strings.ToLower(strings.ReplaceAll(kind, "_", "-"))+"=true")
	}
	slices.Sort(flags)
	return flags
}

// operators are the tokens go-gremlins' default mutators change, the
// two-character ones first, so that a column reads "<=" and not "<".
var operators = []string{"<=", ">=", "==", "!=", "++", "--", "<", ">", "+", "-", "*", "/", "%"}

// swaps are what each default mutator makes of a token, as go-gremlins'
// documentation of its mutations tables them: the runner applies a mutant
// itself to test it again (a timed-out one of a protocol file).
var swaps = map[string]map[string]string{
	"ARITHMETIC_BASE":       {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*"},
	"CONDITIONALS_BOUNDARY": {">": ">=", ">=": ">", "<": "<=", "<=": "<"},
	"CONDITIONALS_NEGATION": {"==": "!=", "!=": "==", ">": "<=", "<=": ">", "<": ">=", ">=": "<"},
	"INCREMENT_DECREMENT":   {"++": "--", "--": "++"},
	"INVERT_NEGATIVES":      {"-": "+"},
}

// operatorAt is the operator that starts at column col (1-based, in
// bytes, go/token's) of line, or "" when none does.
func operatorAt(line string, col int) string {
	if col < 1 || col > len(line) {
		return ""
	}
	for _, op := range operators {
		if strings.HasPrefix(line[col-1:], op) {
			return op
		}
	}
	return ""
}

// marked is line, trimmed, with the operator at col between ⟦ and ⟧: what
// a reader sees of a mutant, and what an equivalents entry names, so that
// an entry argues the one operator of its line and not each of the line's
// operators that one mutator changes.
func marked(line string, col int) string {
	op := operatorAt(line, col)
	if op == "" {
		return strings.TrimSpace(line) // no operator there: the line alone, which no entry names
	}
	return strings.TrimSpace(line[:col-1] + "⟦" + op + "⟧" + line[col-1+len(op):])
}

// mutate is src with the mutant of kind at line:col (go-gremlins'
// report) applied, as go-gremlins applies it: the one token swapped.
func mutate(src string, line, col int, kind string) (string, error) {
	lines := strings.SplitAfter(src, "\n")
	if line < 1 || line > len(lines) {
		return "", fmt.Errorf("line %d: the file has %d", line, len(lines))
	}
	l := lines[line-1]
	op := operatorAt(l, col)
	to, ok := swaps[kind][op]
	if !ok {
		return "", fmt.Errorf("%d:%d: no %s mutant of %q", line, col, kind, strings.TrimSpace(l))
	}
	before, after := l[:col-1], l[col-1+len(op):]
	if strings.HasSuffix(before, "+") || strings.HasSuffix(before, "-") || strings.HasSuffix(before, "/") {
		before += " " // gofmt writes a+-1 tight: a--1, a++1 and a//1 would be other tokens
	}
	if strings.HasPrefix(after, "+") || strings.HasPrefix(after, "-") || strings.HasPrefix(after, "*") || strings.HasPrefix(after, "/") {
		after = " " + after // and a**p, made a/*p, would open a comment
	}
	lines[line-1] = before + to + after
	return strings.Join(lines, ""), nil
}
