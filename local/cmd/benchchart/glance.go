package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// notMeasured fills a cell no test of the run measures.
const notMeasured = "—"

// glance is the table BENCHMARKS.md opens with, and the paragraph above it:
// every case a reader compares, with pkg/idem's two paths, Powertools and
// the floor, all from one run.
func glance(s *source, info runInfo) string {
	rows := latencyRows(s)
	rows = append(rows, cacheRow(s), raceRow(s), holderRow(s))
	rows = append(rows, loadRows(s)...)
	rows = append(rows, concurrencyRows(s)...)
	rows = append(rows, coldStartRow(s))
	var b strings.Builder
	fmt.Fprintf(&b, "From one `make bench` on %s (%s): %s on loopback; %s, %s", info.Started.UTC().Format("2006-01-02"), info.wall(), s.engine(), info.Machine, info.versions())
	if info.LoadAtStart != nil {
		fmt.Fprintf(&b, "; load average %.2f as it began", *info.LoadAtStart)
	}
	b.WriteString(". Times are this machine's and this engine's, not DynamoDB's: compare them within a row. " +
		"The Powertools column is the side-by-side run's, both libraries through one counting proxy; the other columns are from runs without it. " +
		notMeasured + ": not measured. Each row's method, and its full table, is in the sections below.\n\n")
	b.WriteString("| case | pkg/idem `Do` | pkg/idem `DoAtomic` | Powertools: its calls; pkg/idem's time over its | the floor, the same calls made bare: `Do`'s, `DoAtomic`'s |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// latencyRows are the cases the floor times, each path beside its floor
// and, where the side by side times the case, Powertools beside both.
func latencyRows(s *source) [][]string {
	var rows [][]string
	for _, c := range latencyCases {
		row := []string{c.label}
		var floors []string
		for _, path := range paths {
			key := path + ": " + c.floor
			cell := fmt.Sprintf("%s ms (%s× floor), %s", s.fig(floor, colLibMs, key), s.fig(floor, colOverFloor, key), calls(s.fig(floor, colFloorCalls, key)))
			if c.side != "" && c.floor == "replay" && s.fig(sideBySide, colSideRuns, c.side, "pkg/idem "+path) != "0" {
				cell += ", and the work runs again"
			}
			row = append(row, cell)
			floors = append(floors, s.fig(floor, colFloorMs, key)+" ms")
		}
		pt := notMeasured
		switch {
		case c.side != "":
			pt = fmt.Sprintf("%s; `Do` %s, `DoAtomic` %s", calls(s.fig(sideBySide, colSideCalls, c.side, libPT)),
				s.fig(sideBySide, colVsPT, c.side, libDo), s.fig(sideBySide, colVsPT, c.side, libAtomic))
		case c.powertools != nil:
			pt = c.powertools(s)
		}
		rows = append(rows, append(row, pt, strings.Join(floors, ", ")))
	}
	return rows
}

// cacheRow is a replay that Options.Cache answers in the execution
// environment that saw the completion.
func cacheRow(s *source) []string {
	atomicCalls := s.cell(atomicReplay, colReplayCall, atomicCached)
	if strings.HasPrefix(atomicCalls, "none") {
		atomicCalls = "0"
	}
	return []string{"replay from `Options.Cache`, same execution environment",
		fmt.Sprintf("%s µs, %s", s.fig(cache, colCacheUs, withCache), calls(s.fig(cache, colCacheCalls, withCache))),
		fmt.Sprintf("%.1f µs, %s", s.num(atomicReplay, colReplayMs, atomicCached)*1000, calls(atomicCalls)),
		notMeasured, notMeasured}
}

var raceWidth = regexp.MustCompile(`^([0-9]+) requests at once on one key`)

func raceRow(s *source) []string {
	row := []string{s.match(race, colRaceRuns, raceWidth) + " requests at once on one key: the work runs, orders commit"}
	for _, lib := range []string{libDo, libAtomic, libPT} {
		row = append(row, plural(s.cell(race, colRaceRuns, lib), "run")+", "+plural(s.cell(race, colOrders, lib), "order"))
	}
	return append(row, notMeasured)
}

func holderRow(s *source) []string {
	cell := func(lib string) string {
		return fmt.Sprintf("%s; the holder gets %s, a replay returns %s", plural(s.cell(holder, colOrders, lib), "order"),
			s.cell(holder, colHolderGot, lib), s.cell(holder, colReplayGets, lib))
	}
	return []string{"a holder outlives its lease, a retry takes the key over", cell(libDo), notMeasured, cell(libPT), notMeasured}
}

var (
	concurrentClients = regexp.MustCompile(`([0-9]+) concurrent clients`)
	cpuClients        = regexp.MustCompile(`([0-9]+) clients`)
)

// loadRows are the order handler under load: its throughput, and its CPU
// beside its floor's (the figure under load that resolves a few per cent).
func loadRows(s *source) [][]string {
	rate := []string{fmt.Sprintf("under load, %s clients: requests/s (a plain handler, no idempotency: %s)",
		s.match(load, colRate, concurrentClients), s.fig(load, colRate, plainHandler))}
	cpu := []string{fmt.Sprintf("under load, %s clients: the handler's CPU per request", s.match(loadCPU, colHandlerUs, cpuClients))}
	var floors, controls []string
	for _, path := range paths {
		rate = append(rate, s.fig(load, colRate, path))
		cpu = append(cpu, fmt.Sprintf("%s µs (%s× floor)", s.fig(loadCPU, colHandlerUs, path), s.fig(loadCPU, colHandlerOvr, path)))
		floors = append(floors, s.fig(loadCPU, colHandlerUs, path+" floor")+" µs")
		controls = append(controls, s.fig(loadCPU, colHandlerOvr, "control: "+path+controlSuffix))
	}
	rate = append(rate, notMeasured, notMeasured)
	cpu = append(cpu, notMeasured, strings.Join(floors, ", ")+" (a floor beside itself: "+strings.Join(controls, ", ")+")")
	return [][]string{rate, cpu}
}

// concurrencyRows are the most invocations at once the run tried in one
// execution environment, in process and under the emulator.
func concurrencyRows(s *source) [][]string {
	n, m := strconv.Itoa(topLevel(s, inProcess)), strconv.Itoa(topLevel(s, emulator))
	local := []string{n + " invocations at once in one process: requests/s, p50"}
	rie := []string{m + " at once under the Runtime Interface Emulator: requests/s, achieved concurrency"}
	for _, path := range paths {
		local = append(local, s.fig(inProcess, colRate, n, path)+", "+s.fig(inProcess, colP50, n, path)+" ms")
		rie = append(rie, s.fig(emulator, colRate, m, path)+", "+s.fig(emulator, colAchieved, m, path))
	}
	return [][]string{append(local, notMeasured, notMeasured), append(rie, notMeasured, notMeasured)}
}

// topLevel is the most invocations at once in r's table.
func topLevel(s *source, r ref) int {
	top := 0
	for _, k := range s.keys(r, colRate) {
		if n, err := strconv.Atoi(k[0]); err == nil && n > top {
			top = n
		}
	}
	if top == 0 && s.err == nil {
		s.fail("%s: no row of invocations at once", r.file)
	}
	return top
}

func coldStartRow(s *source) []string {
	return []string{"cold start: process start to first response; bootstrap size",
		fmt.Sprintf("%s ms; %s MB (the order function)", s.fig(coldStart, colColdMs, coldFunction), s.fig(coldStart, colBootSize, coldFunction)),
		"the same function", notMeasured,
		fmt.Sprintf("%s ms; %s MB (`lambda.Start` alone)", s.fig(coldStart, colColdMs, coldBaseline), s.fig(coldStart, colBootSize, coldBaseline))}
}

// calls is "1 call", "2 calls".
func calls(n string) string { return plural(n, "call") }

func plural(n, noun string) string {
	if n == "1" {
		return n + " " + noun
	}
	return n + " " + noun + "s"
}

// refusals are the answers of a tally ("201 ×16, IdempotencyAlreadyInProgressError ×34")
// other than 201.
func refusals(tally string) string {
	var out []string
	for _, part := range strings.Split(tally, ", ") {
		if name := strings.Fields(part + " ")[0]; name != "201" {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return "201 only"
	}
	return strings.Join(out, ", ")
}

// before is s up to the first sep, all of s without one.
func before(s, sep string) string {
	head, _, _ := strings.Cut(s, sep)
	return head
}

// Markers of the glance in BENCHMARKS.md: make bench replaces what lies
// between them. The opening marker is found by its start (glanceOpen) and
// written whole, so that a doc whose marker names where this program
// lived before still takes the glance, and gets today's marker.
const (
	glanceOpen  = "<!-- glance:"
	glanceBegin = glanceOpen + " make bench writes from here to the closing marker (local/cmd/benchchart); edit local/cmd/benchchart, not this -->"
	glanceEnd   = "<!-- /glance -->"
)

// splice puts the glance between doc's markers.
func splice(doc, glance string) (string, error) {
	head, rest, ok := strings.Cut(doc, glanceOpen)
	if ok {
		_, rest, ok = strings.Cut(rest, "-->")
	}
	if !ok {
		return "", fmt.Errorf("%w: no line %q to write the glance after", errBench, glanceBegin)
	}
	_, tail, ok := strings.Cut(rest, glanceEnd)
	if !ok {
		return "", fmt.Errorf("%w: no line %q after %q", errBench, glanceEnd, glanceBegin)
	}
	return head + glanceBegin + "\n\n" + glance + "\n" + glanceEnd + tail, nil
}
