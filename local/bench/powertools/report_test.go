package powertools_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemkeys/idem/local/measure"
)

// measured is what the side-by-side run measured: the sequential
// latencies, the races, the slow holders and the other bodies' answers.
type measured struct {
	lat         latencies
	races, slow map[string][]outcome
	others      []otherAnswer
}

// renderReport is the report of m, over rounds rounds of n sequential
// requests per case.
func renderReport(b *bench, m measured, rounds, n int) string {
	lat, races, slow, others := m.lat, m.races, m.slow, m.others
	var w strings.Builder
	fmt.Fprintf(&w, "pkg/idem (Go, aws-sdk-go-v2) beside Powertools for AWS Lambda (TypeScript) idempotency 2.35.0 (Node.js, AWS SDK for JavaScript v3), same engine (DynamoDB Local 3.3.1), same counting proxy, %d rounds, the libraries' order rotating.\n\n", rounds)
	renderLatencies(&w, b, lat, n)
	renderRaces(&w, b, races)
	renderSlow(&w, slow)
	renderOthers(&w, others)
	return w.String()
}

func renderLatencies(w *strings.Builder, b *bench, lat latencies, n int) {
	fmt.Fprintf(w, "Sequential requests, %d per case, library and round; ms per request is the median over rounds; the ratio is pkg/idem's time over Powertools' in the same round (median, min–max over rounds):\n\n", n)
	fmt.Fprintln(w, "| case | library | DynamoDB calls per request | handler runs per request | ms per request | vs Powertools |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, c := range latencyCases {
		pt := lat.perOp[c.name+"/Powertools"]
		for _, lib := range b.libs {
			id := c.name + "/" + lib.name()
			ratio := "1"
			if lib.name() != "Powertools" {
				rs := make([]float64, len(pt))
				for r := range pt {
					rs[r] = float64(lat.perOp[id][r]) / float64(pt[r])
				}
				ratio = fmt.Sprintf("%.2f (%.2f–%.2f)", measure.Median(rs), slices.Min(rs), slices.Max(rs))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f | %s |\n", c.name, lib.name(), showCalls(lat.calls[id], n), perOp(lat.executions[id], n), ms(measure.Median(lat.perOp[id])), ratio)
		}
	}
}

func renderRaces(w *strings.Builder, b *bench, races map[string][]outcome) {
	fmt.Fprintf(w, "\n%d requests at once on one key, once per round (min–max over rounds where they differ):\n\n", raceWidth)
	fmt.Fprintln(w, "| library | executions of the handler | committed orders | answers (last round) | DynamoDB calls per race |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, lib := range b.libs {
		os := races[lib.name()]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", lib.name(), span(field(os, func(o outcome) int { return o.executions })),
			span(field(os, func(o outcome) int { return o.effects })), showTally(os[len(os)-1].answers), span(field(os, func(o outcome) int { return o.calls })))
	}
}

func renderSlow(w *strings.Builder, slow map[string][]outcome) {
	fmt.Fprintf(w, "\nA holder with a %v lease (pkg/idem: Options.Lease; Powertools: the Lambda context's remaining time) runs %v past it; a retry takes the key over and completes; then the holder finishes. Once per round:\n\n", lease, 200*time.Millisecond)
	fmt.Fprintln(w, "| library | executions | committed orders | the holder got | the retry got | a replay afterwards returns | DynamoDB calls |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, name := range []string{"pkg/idem Do", "Powertools"} {
		os := slow[name]
		last := os[len(os)-1].slow
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", name, span(field(os, func(o outcome) int { return o.executions })),
			span(field(os, func(o outcome) int { return o.effects })), kind(last.holder), kind(last.retry), whose(last), span(field(os, func(o outcome) int { return o.calls })))
	}
}

func renderOthers(w *strings.Builder, others []otherAnswer) {
	fmt.Fprintln(w, "\nThe same key, first with one body, then with another:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| library | first body | other body |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, o := range others {
		second := kind(o.second)
		if o.second == o.first {
			second += ", the first body's response replayed (same order id): the other body was not looked at"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", o.who, kind(o.first), second)
	}
}

// kind drops the order id from an answer.
func kind(a string) string { return strings.Fields(a + " ")[0] }

func whose(s slowResult) string {
	switch s.replay {
	case s.retry:
		return "the retry's order"
	case s.holder:
		return "the holder's order"
	}
	return kind(s.replay)
}

func field(os []outcome, f func(outcome) int) []int {
	xs := make([]int, len(os))
	for i, o := range os {
		xs[i] = f(o)
	}
	return xs
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
