// Package model checks three Promela models with spin, exhaustively:
// idem.pml, the protocol (Store.Do, DoAtomic, the operator's Lapse and
// Delete, the response cache: every interleaving of retrying clients of one
// request, its duplicate and another request under the same key, with
// crashes, the commit landed or in flight included, work errors, slow
// holders, TTL expiry, and every call landing and losing its answer, then
// sent again or given up, or landing late); client.pml, idemclient's
// verdicts over one operation's attempts; and queue.pml, the SQS door's
// acknowledgements of one event's deliveries, and the stream doors' order
// from a checkpoint (STREAM). DESIGN.md ("What the model
// proves") says what each proves and assumes.
//
// MODEL_SIZE=big (make model) adds the larger runs, MODEL_SIZE=soak (make
// soak) the largest.
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

// The stream's order: a key's second change commits only after its first.
const inStreamOrder = "((r!=2)||(rst[0]==2))"

// The client's two properties, as spin prints them.
const (
	saidNothing = "((verdict!=3)||!(acted))"
	answered    = "(((verdict!=1)||((kind==1)&&(st==3)))||((kind!=1)&&!(acted)))"
)

type modelRun struct {
	name      string
	model     string // the .pml file
	defines   []string
	violation string // "" means the model must verify with no error
	size      string // "": every run; "big": make model and make soak; "soak": make soak only
}

var runs = []modelRun{
	{"every fault, the request and its duplicate", "idem.pml", nil, "", ""},
	{"every fault, the request and another under its key", "idem.pml", []string{"OTHER"}, "", ""},
	{"no faults but lost answers, three requests: each ends answered", "idem.pml", []string{"NOFAULTS"}, "", ""},
	{"DoAtomic beside Do of the same request (a takeover of Do's lapse)", "idem.pml", []string{"ATOMIC"}, "", ""},
	{"DoAtomic and another request's Do", "idem.pml", []string{"ATOMIC", "OTHER"}, "", ""},
	{"the operator beside the request and its duplicate, lost answers", "idem.pml", []string{"OPERATOR", "NOFAULTS"}, "", ""},
	{"the operator beside the request and another, lost answers", "idem.pml", []string{"OPERATOR", "NOFAULTS", "OTHER"}, "", ""},
	{"the cache, three requests in one environment, lost answers", "idem.pml", []string{"CACHE", "NOFAULTS"}, "", ""},
	{"the cache, the request and another, every fault", "idem.pml", []string{"CACHE", "OTHER"}, "", ""},
	{"negative control: commit without the fence", "idem.pml", []string{"NO_FENCE"}, "!(replaced[inflight_tok])", ""},
	{"negative control: a lapse that keeps the token (a late commit lands)", "idem.pml", []string{"LAPSE_KEEPS_TOKEN"}, "!(replaced[inflight_tok])", ""},
	{"negative control: takeover without the fingerprint", "idem.pml", []string{"OTHER", "NO_FP_CHECK"}, "(s_resp_fp==myfp)", ""},
	{"negative control: a provider key per attempt", "idem.pml", []string{"PER_ATTEMPT_KEY"}, "(charges<=1)", ""},
	{"negative control: release as a delete (the orphan)", "idem.pml", []string{"OTHER", "RELEASE_DELETE"}, orphan, ""},
	{"negative control: a claim blind to its own token (the stuck 409)", "idem.pml", []string{"NOFAULTS", "NO_OWN_TOKEN"}, "((tok==0)||(s_token!=tok))", ""},
	{"negative control: the record expires under a slow holder", "idem.pml", []string{"OTHER", "SLOW_EXPIRY"}, "(tok_life[tok]==life)", ""},
	{"negative control: an unknown claim handed back by a lapse (the late claim's 409)", "idem.pml", []string{"HANDBACK_AS_LAPSE"}, "((handed==0)||(s_token!=handed))", ""},
	{"negative control: DoAtomic settled by a lapse (the record is gone, the commit lands)", "idem.pml", []string{"ATOMIC", "ATOMIC_SETTLE_LAPSE"}, "lapse_lost", ""},
	{"negative control: DoAtomic's claim condition without its expiry term", "idem.pml", []string{"ATOMIC", "OTHER", "ATOMIC_NO_EXPIRY"}, "!(expired)", ""},
	{"negative control: the operator's delete without its condition", "idem.pml", []string{"OPERATOR", "NOFAULTS", "OTHER", "NO_DELETE_COND"}, "((status==2)&&(rtoken==t))", ""},
	{"negative control: the cache filled before the commit's answer", "idem.pml", []string{"CACHE", "OTHER", "CACHE_EARLY"}, "((committed_fp[c_tok]!=0)&&(committed_fp[c_tok]!=myfp))", ""},

	{"the client: one operation's attempts, resends, redirects and layers", "client.pml", nil, "", ""},
	{"the client, negative control: a failed resend's dial error counted as never sent", "client.pml", []string{"DIAL_AS_UNSENT"}, saidNothing, ""},
	{"the client, negative control: an answer after the transport's resend judged alone", "client.pml", []string{"RESEND_UNCOUNTED"}, answered, ""},
	{"the client, negative control: a redirect after an acting attempt taken as the outcome", "client.pml", []string{"REDIRECT_TELLS"}, answered, ""},
	{"the client, negative control: a followed 307 starting the operation afresh", "client.pml", []string{"FOLLOW_FORGETS"}, saidNothing, ""},

	{"the queue: one message, standard", "queue.pml", nil, "", ""},
	{"the queue: one message, FIFO", "queue.pml", []string{"FIFO"}, "", ""},
	{"the queue: two messages of one event, standard", "queue.pml", []string{"TWO"}, "", ""},
	{"the queue: two messages of one event, FIFO", "queue.pml", []string{"TWO", "FIFO"}, "", ""},
	{"the queue, negative control: a delivery whose key is in progress acknowledged", "queue.pml", []string{"ACK_IN_PROGRESS"}, "(st==2)", ""},
	{"the queue, negative control: two messages, one acknowledged while the other holds the key", "queue.pml", []string{"TWO", "ACK_IN_PROGRESS"}, "(st==2)", ""},
	{"the queue, negative control: FIFO processing past a failed message", "queue.pml", []string{"FIFO", "FIFO_NO_SKIP"}, "o_done", ""},
	{"the stream: two changes of one key and one of another, from a checkpoint", "queue.pml", []string{"STREAM"}, "", ""},
	{"the stream, negative control: processing past a failed record of the same key", "queue.pml", []string{"STREAM", "STREAM_NO_HOLD"}, inStreamOrder, ""},
	{"the stream, negative control: the answer names the last failed record", "queue.pml", []string{"STREAM", "STREAM_NAME_LAST"}, "(rst[r]==2)", ""},
	{"the stream, negative control: a record whose key is in progress acknowledged", "queue.pml", []string{"STREAM", "ACK_IN_PROGRESS"}, "(rst[r]==2)", ""},

	{"every fault, the operator beside the request and another", "idem.pml", []string{"OPERATOR", "OTHER"}, "", "big"},
	{"every fault, the cache, the request and its duplicate", "idem.pml", []string{"CACHE"}, "", "big"},
	{"the queue: one message, four batches, standard", "queue.pml", []string{"MAXD=4"}, "", "big"},
	{"the queue: one message, four batches, FIFO", "queue.pml", []string{"MAXD=4", "FIFO"}, "", "big"},
	{"the queue: two messages of one event, four batches, FIFO", "queue.pml", []string{"MAXD=4", "TWO", "FIFO"}, "", "soak"},
	{"the queue: one message, five batches, standard", "queue.pml", []string{"MAXD=5"}, "", "soak"},
	{"the stream: four batches", "queue.pml", []string{"STREAM", "MAXD=4"}, "", "big"},
	{"the stream: six batches", "queue.pml", []string{"STREAM", "MAXD=6"}, "", "soak"},
}

// included reports whether a run of size belongs to this invocation's
// MODEL_SIZE.
func included(size string) bool {
	switch os.Getenv("MODEL_SIZE") {
	case "soak":
		return true
	case "big":
		return size != "soak"
	}
	return size == ""
}

func TestModel(t *testing.T) {
	if testing.Short() {
		t.Skip("the spin models: make model")
	}
	if _, err := exec.LookPath("spin"); err != nil {
		t.Fatal("spin is not installed: make deps installs it (Debian: apt-get install spin)")
	}
	for _, tc := range runs {
		if !included(tc.size) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // one pan per core: go test runs GOMAXPROCS subtests at once
			check(t, tc)
		})
	}
}

func check(t *testing.T, tc modelRun) {
	model, err := filepath.Abs(tc.model)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var flags []string
	for _, d := range tc.defines {
		flags = append(flags, "-D"+d)
	}
	step(t, dir, "spin", append(append([]string{}, flags...), "-a", model)...)
	// gcc's -O2 costs seconds per pan.c on this machine: more than a
	// negative control's search, which stops at its first counterexample,
	// or the whole search of the client's and the queue's runs in make
	// test. It pays for the protocol's runs and the larger ones.
	opt := "-O0"
	if tc.violation == "" && (tc.model == "idem.pml" || tc.size != "") {
		opt = "-O2"
	}
	step(t, dir, "gcc", append([]string{opt, "-DSAFETY", "-DCOLLAPSE", "-o", "pan", "pan.c"}, flags...)...)
	start := time.Now()
	out := step(t, dir, "./pan", "-m100000")
	elapsed := time.Since(start)
	m := errorsLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no verdict in pan's output:\n%s", out)
	}
	if strings.Contains(out, "max search depth too small") {
		t.Fatalf("the search was cut short:\n%s", out)
	}
	_, trailErr := os.Stat(filepath.Join(dir, tc.model+".trail"))
	switch {
	case tc.violation == "" && m[1] != "0":
		t.Fatalf("%s errors:\n%s", m[1], out)
	case tc.violation != "" && (m[1] == "0" || !strings.Contains(squeeze(out), "assertionviolated"+squeeze(tc.violation)) || trailErr != nil):
		t.Fatalf("want a counterexample trail violating %s, got:\n%s", tc.violation, out)
	}
	t.Logf("%s; %.1fs", strings.Join(summary(out), "; "), elapsed.Seconds())
}

// step runs one step of the check (spin, gcc or pan) in dir.
func step(t *testing.T, dir, name string, args ...string) string {
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
