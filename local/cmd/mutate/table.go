package main

import (
	"fmt"
	"strings"
	"time"
)

// The ways a mutant's run ends.
const (
	resultKilled = "killed"
	resultLived  = "lived"
	resultBroken = "broken" // the runner's failure: the entry is wrong
)

// result names what the mutant came to.
func (o outcome) result() string {
	switch {
	case o.v.build != "" || o.spurious != "" || o.unrepeated:
		return resultBroken
	case o.v.failed():
		return resultKilled
	}
	return resultLived
}

// progress is the mutant's line as the run goes.
func (o outcome) progress() string {
	switch o.result() {
	case resultBroken:
		return o.broken()
	case resultKilled:
		line := fmt.Sprintf("killed by %s in %s", o.v.kill(), round(o.v.at))
		if o.m.equivalent != "" {
			line += ", though the list argues it equivalent: " + o.m.equivalent
		}
		if why := o.v.why(); len(why) > 0 {
			line += "\n" + indent(strings.Join(why, "\n"))
		}
		return line
	}
	line := fmt.Sprintf("lived (%s passed in %s)", strings.Join(o.m.kill, " "), round(o.ran))
	if o.m.equivalent != "" {
		return line + ", argued equivalent: " + o.m.equivalent
	}
	return "LIVED, nothing guards it: " + line
}

// broken says why the run could not judge the mutant.
func (o outcome) broken() string {
	switch {
	case o.v.build != "":
		return "did not compile, so the entry is wrong:\n" + indent(o.v.build)
	case o.unrepeated:
		return fmt.Sprintf("%s failed once, and passed when run again alone on the mutant: a test that fails by chance, no kill", o.v.kill())
	}
	return fmt.Sprintf("%s failed, but it fails without the mutant too (one of %d runs):\n%s", o.v.kill(), controlRuns, indent(o.spurious))
}

func indent(text string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n    ")
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// markdown is the run's table: a row a mutant, then the closing line.
func (p *protocolRun) markdown() string {
	var b strings.Builder
	b.WriteString("| mutant | guarantee | first test that kills it | its time |\n|---|---|---|---:|\n")
	for _, o := range p.outcomes {
		kill, at := o.cells()
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", o.m.name, cell(o.m.guarantee), cell(kill), at)
	}
	fmt.Fprintf(&b, "\n%s.\n", p.closing())
	return b.String()
}

// cells are the row's last two: the kill, and its time.
func (o outcome) cells() (kill, at string) {
	switch o.result() {
	case resultKilled:
		kill = "`" + o.v.pkg + "` `" + o.v.test + "`"
		if o.v.test == "" {
			kill = o.v.kill()
		}
		if o.m.equivalent != "" {
			kill += " (argued equivalent: " + o.m.equivalent + ")"
		}
		return kill, round(o.v.at).String()
	case resultLived:
		if o.m.equivalent != "" {
			return "lived, equivalent: " + o.m.equivalent, "all passed in " + round(o.ran).String()
		}
		return "**lived**", "all passed in " + round(o.ran).String()
	}
	first, _, _ := strings.Cut(o.broken(), "\n")
	return "**the entry is wrong**: " + first, "—"
}

// cell keeps a table cell's text in its cell.
func cell(text string) string { return strings.ReplaceAll(text, "|", `\|`) }

// closing counts the outcomes, with the run's time.
func (p *protocolRun) closing() string {
	n := map[string]int{}
	equivalent := 0
	for _, o := range p.outcomes {
		n[o.result()]++
		if o.result() == resultLived && o.m.equivalent != "" {
			equivalent++
		}
	}
	noun := "protocol mutants"
	if len(p.outcomes) == 1 {
		noun = "protocol mutant"
	}
	line := fmt.Sprintf("%d %s: %d killed, %d lived (%d of them argued equivalent)",
		len(p.outcomes), noun, n[resultKilled], n[resultLived], equivalent)
	if n[resultBroken] > 0 {
		line += fmt.Sprintf(", %d entries wrong", n[resultBroken])
	}
	return line + ", in " + round(p.elapsed).String()
}

// wrong are the outcomes that fail the run: a mutant that lived with no
// argument that it is equivalent, one argued equivalent that a test
// killed (the argument is wrong), and every entry the run found wrong.
func (p *protocolRun) wrong() []string {
	var out []string
	for _, o := range p.outcomes {
		switch r := o.result(); {
		case r == resultBroken:
			out = append(out, o.m.name+": "+o.broken())
		case r == resultLived && o.m.equivalent == "":
			out = append(out, fmt.Sprintf("%s lived, and the list argues no equivalence: unguarded: %s", o.m.name, o.m.guarantee))
		case r == resultKilled && o.m.equivalent != "":
			out = append(out, fmt.Sprintf("%s is argued equivalent, and %s killed it: the argument is wrong", o.m.name, o.v.kill()))
		}
	}
	return out
}
