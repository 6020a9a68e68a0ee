// Package model checks idem.pml, a Promela model of Store.Do, DoAtomic,
// the operator's Lapse and Delete and the response cache, with spin:
// exhaustively, every interleaving of retrying clients of one request, its
// duplicate and another request under the same key, with crashes (the
// commit landed or in flight included), work errors, slow holders, TTL
// expiry, and every call (claim, takeover, commit, lapse, hand-back, the
// operator's) landing and losing its answer, then sent again or given up,
// or landing late. DESIGN.md ("What the model proves") says what it proves
// and assumes.
package model_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var errorsLine = regexp.MustCompile(`errors: (\d+)`)

// orphan is the no-orphan assertion at a request's end, as spin prints it.
const orphan = "((((effect_life!=life)||!((provider_done&&(provider_fp==myfp))))||(outcome[me]==1))||(outcome[me]==2))"

func TestModel(t *testing.T) {
	if _, err := exec.LookPath("spin"); err != nil {
		t.Fatal("spin is not installed: make deps installs it (Debian: apt-get install spin)")
	}
	model, err := filepath.Abs("idem.pml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		defines   []string
		violation string // "" means the model must verify with no error
	}{
		{"every fault, the request and its duplicate", nil, ""},
		{"every fault, the request and another under its key", []string{"OTHER"}, ""},
		{"no faults but lost answers, three requests: each ends answered", []string{"NOFAULTS"}, ""},
		{"DoAtomic beside Do of the same request (a takeover of Do's lapse)", []string{"ATOMIC"}, ""},
		{"DoAtomic and another request's Do", []string{"ATOMIC", "OTHER"}, ""},
		{"the operator beside the request and its duplicate, lost answers", []string{"OPERATOR", "NOFAULTS"}, ""},
		{"the operator beside the request and another, lost answers", []string{"OPERATOR", "NOFAULTS", "OTHER"}, ""},
		{"the cache, three requests in one environment, lost answers", []string{"CACHE", "NOFAULTS"}, ""},
		{"the cache, the request and another, faults", []string{"CACHE", "OTHER", "LEAN"}, ""},
		{"negative control: commit without the fence", []string{"NO_FENCE"}, "!(replaced[inflight_tok])"},
		{"negative control: a lapse that keeps the token (a late commit lands)", []string{"LAPSE_KEEPS_TOKEN"}, "!(replaced[inflight_tok])"},
		{"negative control: takeover without the fingerprint", []string{"OTHER", "NO_FP_CHECK"}, "(s_resp_fp==myfp)"},
		{"negative control: a provider key per attempt", []string{"PER_ATTEMPT_KEY"}, "(charges<=1)"},
		{"negative control: release as a delete (the orphan)", []string{"OTHER", "RELEASE_DELETE"}, orphan},
		{"negative control: a claim blind to its own token (the stuck 409)", []string{"NOFAULTS", "NO_OWN_TOKEN"}, "((tok==0)||(s_token!=tok))"},
		{"negative control: the record expires under a slow holder", []string{"OTHER", "SLOW_EXPIRY"}, "(tok_life[tok]==life)"},
		{"negative control: an unknown claim handed back by a lapse (the late claim's 409)", []string{"HANDBACK_AS_LAPSE"}, "((handed==0)||(s_token!=handed))"},
		{"negative control: DoAtomic settled by a lapse (the record is gone, the commit lands)", []string{"ATOMIC", "ATOMIC_SETTLE_LAPSE"}, "lapse_lost"},
		{"negative control: DoAtomic's claim condition without its expiry term", []string{"ATOMIC", "OTHER", "ATOMIC_NO_EXPIRY"}, "!(expired)"},
		{"negative control: the operator's delete without its condition", []string{"OPERATOR", "NOFAULTS", "OTHER", "NO_DELETE_COND"}, "((status==2)&&(rtoken==t))"},
		{"negative control: the cache filled before the commit's answer", []string{"CACHE", "OTHER", "LEAN", "CACHE_EARLY"}, "((committed_fp[c_tok]!=0)&&(committed_fp[c_tok]!=myfp))"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // one pan per core: go test runs GOMAXPROCS subtests at once
			dir := t.TempDir()
			var flags []string
			for _, d := range tc.defines {
				flags = append(flags, "-D"+d)
			}
			run(t, dir, "spin", append(append([]string{}, flags...), "-a", model)...)
			// A negative control stops at its first counterexample: gcc's
			// -O2 would cost it more time than the search (seconds per
			// pan.c on this machine).
			opt := "-O2"
			if tc.violation != "" {
				opt = "-O0"
			}
			run(t, dir, "gcc", append([]string{opt, "-DSAFETY", "-DCOLLAPSE", "-o", "pan", "pan.c"}, flags...)...)
			start := time.Now()
			out := run(t, dir, "./pan", "-m100000")
			elapsed := time.Since(start)
			m := errorsLine.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no verdict in pan's output:\n%s", out)
			}
			if strings.Contains(out, "max search depth too small") {
				t.Fatalf("the search was cut short:\n%s", out)
			}
			_, trailErr := os.Stat(filepath.Join(dir, "idem.pml.trail"))
			switch {
			case tc.violation == "" && m[1] != "0":
				t.Fatalf("%s errors:\n%s", m[1], out)
			case tc.violation != "" && (m[1] == "0" || !strings.Contains(squeeze(out), "assertionviolated"+squeeze(tc.violation)) || trailErr != nil):
				t.Fatalf("want a counterexample trail violating %s, got:\n%s", tc.violation, out)
			}
			t.Logf("%s; %.1fs", strings.Join(summary(out), "; "), elapsed.Seconds())
		})
	}
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	// pan exits non-zero on finding an error; its output says which.
	if err != nil && name != "./pan" {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func summary(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "pan:1:") || strings.Contains(l, "states, stored") || strings.HasPrefix(l, "State-vector") {
			lines = append(lines, l)
		}
	}
	return lines
}

// squeeze drops white space, which spin spends freely in its messages.
func squeeze(s string) string { return strings.Join(strings.Fields(s), "") }
