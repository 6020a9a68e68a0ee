// Package model checks idem.pml, a Promela model of Store.Do, with spin:
// exhaustively, every interleaving of retrying clients of one request, its
// duplicate and another request under the same key, with crashes, work
// errors, slow holders, TTL expiry, and every call (claim, takeover, commit,
// lapse) landing and losing its answer, then sent again or given up.
package model_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var errorsLine = regexp.MustCompile(`errors: (\d+)`)

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
		{"negative control: commit without the fence", []string{"NO_FENCE"}, "!(replaced[inflight_tok])"},
		{"negative control: a lapse that keeps the token (a late commit lands)", []string{"LAPSE_KEEPS_TOKEN"}, "!(replaced[inflight_tok])"},
		{"negative control: takeover without the fingerprint", []string{"OTHER", "NO_FP_CHECK"}, "(s_resp_fp==myfp)"},
		{"negative control: a provider key per attempt", []string{"PER_ATTEMPT_KEY"}, "(charges<=1)"},
		{"negative control: release as a delete (the orphan)", []string{"OTHER", "RELEASE_DELETE"}, "(((aged||!((provider_done&&(provider_fp==myfp))))||(outcome[me]==1))||(outcome[me]==2))"},
		{"negative control: a claim blind to its own token (the stuck 409)", []string{"NOFAULTS", "NO_OWN_TOKEN"}, "((tok==0)||(s_token!=tok))"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var flags []string
			for _, d := range tc.defines {
				flags = append(flags, "-D"+d)
			}
			run(t, dir, "spin", append(append([]string{}, flags...), "-a", model)...)
			run(t, dir, "gcc", append([]string{"-O2", "-DSAFETY", "-DCOLLAPSE", "-o", "pan", "pan.c"}, flags...)...)
			out := run(t, dir, "./pan", "-m100000")
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
			t.Logf("%s", strings.Join(summary(out), "; "))
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
