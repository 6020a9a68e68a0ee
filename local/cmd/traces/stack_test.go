package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/local/template/templatetest"
)

// TestMain starts the engine, unless -short, under which its one test that needs it skips.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(dynamotest.Main(m))
}

var update = flag.Bool("update", false, "write the trace samples of docs/operations.md from this run")

// guide is the document whose samples the stack test holds.
const guide = "docs/operations.md"

func post(api, token, key, body string, timeout time.Duration) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api+"/charges", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tracedStack is make run's stack, tracing to a file of t's, one execution
// environment per function (so which invocation is a cold start does not
// depend on the pool), a lease of 2s; it stops when t ends.
func tracedStack(t *testing.T) (*devstack.Stack, string) {
	t.Helper()
	tpl, bin := templatetest.Built(t)
	prefix := "traces" + strings.ToLower(rand.Text()[:6]) + "-"
	s, err := devstack.Start(context.Background(), devstack.Options{Root: tpl.Dir, BinDir: bin, TablePrefix: prefix,
		APIAddr: "127.0.0.1:0", ProviderAddr: "127.0.0.1:0", Concurrency: 1, Lease: "2s",
		TracesFile: filepath.Join(t.TempDir(), "traces.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, prefix
}

// charge is the body of the test's charges.
const charge = `{"amount":1050,"currency":"usd","payment_method":"pm_card_visa"}`

// replayAndTakeover charges with one key twice (the second a replay), then
// with another kills the function once the provider has charged, and
// retries until the takeover's 201.
func replayAndTakeover(t *testing.T, s *devstack.Stack) {
	t.Helper()
	token, err := s.Auth.Token("user-demo-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	key := "ops-" + strings.ToLower(rand.Text()[:8])
	for i := range 2 {
		if status, body := post(s.APIURL, token, key+"-replay", charge, 10*time.Second); status != 201 {
			t.Fatalf("charge %d: %d %s", i, status, body)
		}
	}
	s.Sim.Inject(provider.Fault{Kind: provider.HangAfterEffect, Delay: 30 * time.Second})
	before := len(s.Sim.Effects())
	go post(s.APIURL, token, key+"-takeover", charge, 2*time.Second) // the client gives up; the function is killed
	for deadline := time.Now().Add(10 * time.Second); len(s.Sim.Effects()) == before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the provider never charged")
		}
	}
	if killed := s.API.Crash(); killed != 1 {
		t.Fatalf("killed %d processes, want the charge's", killed)
	}
	status, body := 0, ""
	for deadline := time.Now().Add(20 * time.Second); status != 201 && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		status, body = post(s.APIURL, token, key+"-takeover", charge, 10*time.Second)
	}
	if status != 201 || len(s.Sim.Effects()) != before+1 {
		t.Fatalf("after the crash: %d %s, %d charges; want the takeover's 201 and no second charge", status, body, len(s.Sim.Effects())-before)
	}
}

// The replay and the takeover of docs/operations.md, through the local
// stack: each function's bootstrap under the Runtime Interface Emulator,
// tracing to the file make run gives them, read back by this command. The
// replay is the Store's span replayed from its one lost claim; the killed
// attempt's ended spans are there under a parent that never ended, and no
// provider create among them returned; the takeover claims, loses, takes
// the lease over, lists the provider's intents instead of creating one,
// and commits. The guide's samples are what this run printed, but for
// durations, ids and times.
func TestTheOperationsGuideShowsARealReplayAndTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end, a replay and a takeover traced through the whole local stack: make test runs it")
	}
	s, prefix := tracedStack(t)
	replayAndTakeover(t, s)
	f, err := os.Open(s.TracesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, skipped, err := read(f)
	if err != nil || skipped > 0 {
		t.Fatalf("read: %v, %d lines skipped", err, skipped)
	}
	traces, _ := selectTraces(all, 0, false)
	if len(traces) < 5 {
		t.Fatalf("%d traces, want the charge, its replay, the killed attempt, a 409 or more, the takeover", len(traces))
	}
	replay, killed, takeover := traces[1], traces[2], traces[len(traces)-1]
	checkReplay(t, replay)
	checkKilled(t, killed)
	checkTakeover(t, takeover)
	samples := map[string]string{"replay": printed(replay, prefix), "takeover": printed(killed, prefix) + "\n" + printed(takeover, prefix)}
	checkGuide(t, samples)
}

func printed(tr *trace, prefix string) string {
	var b bytes.Buffer
	tr.print(&b)
	return strings.ReplaceAll(b.String(), prefix, "local-") // as make run names the tables
}

// events are a span's events, each its name and attributes as one line.
func events(s *span) []string {
	var out []string
	for _, ev := range s.Events {
		line := ev.Name
		for _, kv := range ev.Attributes {
			line += " " + kv.Key + "=" + kv.text()
		}
		out = append(out, line)
	}
	return out
}

func names(spans []*span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// store is the invocation's one child, the Store's span, after checking
// the invocation's route and status.
func store(t *testing.T, tr *trace, status string) *span {
	t.Helper()
	if len(tr.tops) != 1 || tr.tops[0].Name != "POST /charges" || tr.tops[0].attr("http.response.status_code") != status {
		t.Fatalf("trace %s: tops %v, want one POST /charges answering %s", tr.id, names(tr.tops), status)
	}
	kids := tr.children(tr.tops[0])
	if len(kids) != 1 || kids[0].Name != "idem.Do" {
		t.Fatalf("trace %s: under the invocation %v, want the Store's idem.Do", tr.id, names(kids))
	}
	return kids[0]
}

func checkReplay(t *testing.T, tr *trace) {
	t.Helper()
	do := store(t, tr, "201")
	calls := tr.children(do)
	if do.attr("idem.outcome") != "replayed" || !slices.Equal(events(do), []string{"idem.claim idem.result=lost idem.attempt=1"}) ||
		len(calls) != 1 || calls[0].Name != "DynamoDB.PutItem" || calls[0].Status.Code != "Error" {
		t.Errorf("the replay: %s %v over %v, want replayed from one lost claim", do.attr("idem.outcome"), events(do), names(calls))
	}
}

func checkKilled(t *testing.T, tr *trace) {
	t.Helper()
	parents := map[string]bool{}
	for _, s := range tr.tops {
		parents[s.Parent.SpanID] = true
	}
	if len(parents) != 1 || parents[noSpan] || len(tr.tops) != len(tr.spans) || tr.tops[0].Name != "DynamoDB.PutItem" ||
		slices.Contains(names(tr.spans), "HTTP POST") {
		t.Errorf("the killed attempt: %v under %v, want the calls that returned, the claim first and no create, under one parent never recorded", names(tr.spans), parents)
	}
}

func checkTakeover(t *testing.T, tr *trace) {
	t.Helper()
	do := store(t, tr, "201")
	want := []string{"idem.claim idem.result=lost idem.attempt=1", "idem.takeover idem.result=won idem.attempt=2",
		"idem.work idem.result=ok", "idem.commit idem.result=committed idem.writes=2"}
	calls := names(tr.children(do))
	if do.attr("idem.outcome") != "executed" || do.attr("idem.takeover") != "true" || !slices.Equal(events(do), want) ||
		!slices.Contains(calls, "HTTP GET") || slices.Contains(calls, "HTTP POST") || calls[len(calls)-1] != "DynamoDB.TransactWriteItems" {
		t.Errorf("the takeover: %s takeover=%s %v over %v, want %v, the provider listed and not charged, then the commit",
			do.attr("idem.outcome"), do.attr("idem.takeover"), events(do), calls, want)
	}
}

// volatile is what changes from run to run in a printed trace.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d+\.\dms`), "…ms"},
	{regexp.MustCompile(`trace [0-9a-f]{32}`), "trace …"},
	{regexp.MustCompile(`span [0-9a-f]{16}`), "span …"},
	{regexp.MustCompile(`idem\.key_hash=[0-9a-f]{16}`), "idem.key_hash=…"},
	{regexp.MustCompile(`\b\d{10}\b`), "…"}, // unix times in a URL's query
}

func stable(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

// checkGuide compares each sample of the guide, the text block after
// "<!-- local/cmd/traces: name -->", with this run's; -update writes them.
func checkGuide(t *testing.T, samples map[string]string) {
	t.Helper()
	path := filepath.Join(templatetest.Project(t).Dir, guide)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, name := range []string{"replay", "takeover"} {
		marker := "<!-- local/cmd/traces: " + name + " -->\n```text\n"
		i := strings.Index(doc, marker)
		if i < 0 {
			t.Fatalf("%s has no %q", guide, marker)
		}
		start := i + len(marker)
		end := start + strings.Index(doc[start:], "```")
		if *update {
			doc = doc[:start] + samples[name] + doc[end:]
			continue
		}
		if got, want := stable(doc[start:end]), stable(samples[name]); got != want {
			t.Errorf("%s's %s sample is not what this run printed (go test ./local/cmd/traces -run %s -update writes it):\n%s\nthis run:\n%s",
				guide, name, t.Name(), doc[start:end], samples[name])
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
