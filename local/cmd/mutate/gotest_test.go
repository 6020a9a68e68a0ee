package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// clock counts the events read: the nth call says n seconds.
func clock() func() time.Duration {
	n := 0
	return func() time.Duration { n++; return time.Duration(n) * time.Second }
}

func verdictOf(t *testing.T, lines ...string) verdict {
	t.Helper()
	v, err := readVerdict(strings.NewReader(strings.Join(lines, "\n")+"\n"), "example.com/m", clock())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReadVerdictNamesTheFirstTestThatFailed(t *testing.T) {
	v := verdictOf(t,
		`{"Action":"start","Package":"example.com/m/pkg/idem"}`,
		`{"Action":"run","Package":"example.com/m/pkg/idem","Test":"TestA"}`,
		`{"Action":"run","Package":"example.com/m/pkg/idem","Test":"TestB"}`,
		`not an event: go's own line`,
		`{"Action":"run","Package":"example.com/m/pkg/idem","Test":"TestB/two_words"}`,
		`{"Action":"output","Package":"example.com/m/pkg/idem","Test":"TestB/two_words","Output":"=== RUN   TestB/two_words\n"}`,
		`{"Action":"output","Package":"example.com/m/pkg/idem","Test":"TestA","Output":"    a_test.go:3: not this one\n"}`,
		`{"Action":"output","Package":"example.com/m/pkg/idem","Test":"TestB/two_words","Output":"    b_test.go:9: got 201, want 422\n"}`,
		`{"Action":"output","Package":"example.com/m/pkg/idem","Test":"TestB/two_words","Output":"--- FAIL: TestB/two_words (0.00s)\n"}`,
		`{"Action":"fail","Package":"example.com/m/pkg/idem","Test":"TestB/two_words","Elapsed":0}`,
		`{"Action":"fail","Package":"example.com/m/pkg/idem","Test":"TestB","Elapsed":0}`,
		`{"Action":"fail","Package":"example.com/m/pkg/idem","Test":"TestA","Elapsed":0}`,
		`{"Action":"fail","Package":"example.com/m/pkg/idem","Elapsed":0.1}`,
	)
	if v.pkg != "pkg/idem" || v.test != "TestB/two_words" || v.at != time.Second {
		t.Fatalf("got %+v, want TestB/two_words of pkg/idem at 1s", v)
	}
	if got := v.why(); !reflect.DeepEqual(got, []string{"b_test.go:9: got 201, want 422"}) {
		t.Fatalf("why() = %q, want the test's own line", got)
	}
	if got := v.kill(); got != "pkg/idem TestB/two_words" {
		t.Fatalf("kill() = %q", got)
	}
}

func TestReadVerdictTakesABuildFailureForNoKill(t *testing.T) {
	v := verdictOf(t,
		`{"ImportPath":"example.com/m/a [example.com/m/a.test]","Action":"build-output","Output":"# example.com/m/a\n"}`,
		`{"ImportPath":"example.com/m/a [example.com/m/a.test]","Action":"build-output","Output":"a/a.go:2:23: cannot use \"x\"\n"}`,
		`{"ImportPath":"example.com/m/a [example.com/m/a.test]","Action":"build-fail"}`,
		`{"Action":"start","Package":"example.com/m/a"}`,
		`{"Action":"fail","Package":"example.com/m/a","Elapsed":0,"FailedBuild":"example.com/m/a [example.com/m/a.test]"}`,
	)
	if v.build != "# example.com/m/a\na/a.go:2:23: cannot use \"x\"\n" || v.test != "" || !v.failed() {
		t.Fatalf("got %+v, want the build's output and no test", v)
	}
	o := outcome{v: v}
	if o.result() != resultBroken {
		t.Fatalf("a mutant that does not build came to %s, want %s", o.result(), resultBroken)
	}
}

func TestReadVerdictNamesWhatRanWhenThePackageFailedOutsideATest(t *testing.T) {
	v := verdictOf(t,
		`{"Action":"run","Package":"example.com/m/a","Test":"TestDone"}`,
		`{"Action":"pass","Package":"example.com/m/a","Test":"TestDone"}`,
		`{"Action":"run","Package":"example.com/m/a","Test":"TestStuck"}`,
		`{"Action":"output","Package":"example.com/m/a","Output":"panic: test timed out after 1m0s\n"}`,
		`{"Action":"fail","Package":"example.com/m/a","Elapsed":60}`,
	)
	want := verdict{pkg: "a", at: time.Second, running: []string{"TestStuck"}, output: "panic: test timed out after 1m0s\n"}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %+v, want %+v", v, want)
	}
	if got := v.kill(); got != "a (the package failed while TestStuck ran)" {
		t.Fatalf("kill() = %q", got)
	}
}

func TestReadVerdictOfAPassingRunIsNoFailure(t *testing.T) {
	v := verdictOf(t,
		`{"Action":"run","Package":"example.com/m/a","Test":"TestA"}`,
		`{"Action":"skip","Package":"example.com/m/a","Test":"TestA"}`,
		`{"Action":"pass","Package":"example.com/m/a","Elapsed":0.1}`,
	)
	if v.failed() {
		t.Fatalf("got %+v, want no failure", v)
	}
}

func TestTheTableSaysWhatEachMutantCameTo(t *testing.T) {
	p := protocolRun{elapsed: 95 * time.Second, outcomes: []outcome{
		{m: mutant{name: "fence", guarantee: "the fence | holds"}, v: verdict{pkg: "pkg/idem", test: "TestFence", at: 41 * time.Second}},
		{m: mutant{name: "token", guarantee: "once", equivalent: "the SDK sets one"}, ran: 80 * time.Second},
		{m: mutant{name: "scope", guarantee: "scoped"}, ran: 70 * time.Second},
	}}
	want := "| mutant | guarantee | first test that kills it | its time |\n|---|---|---|---:|\n" +
		"| `fence` | the fence \\| holds | `pkg/idem` `TestFence` | 41s |\n" +
		"| `token` | once | lived, equivalent: the SDK sets one | all passed in 1m20s |\n" +
		"| `scope` | scoped | **lived** | all passed in 1m10s |\n" +
		"\n3 protocol mutants: 1 killed, 2 lived (1 of them argued equivalent), in 1m35s.\n"
	if got := p.markdown(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if wrong := p.wrong(); len(wrong) != 1 || !strings.HasPrefix(wrong[0], "scope lived") {
		t.Fatalf("wrong() = %q, want the scope mutant alone", wrong)
	}
}

// A mutant the list argues equivalent and a test kills fails the run: the
// argument is wrong, and a reader of the list would believe it.
func TestAKilledEquivalentMutantFailsTheRun(t *testing.T) {
	p := protocolRun{outcomes: []outcome{
		{m: mutant{name: "token", guarantee: "once", equivalent: "the SDK sets one"}, v: verdict{pkg: "pkg/idem", test: "TestToken"}},
	}}
	if wrong := p.wrong(); len(wrong) != 1 || !strings.Contains(wrong[0], "pkg/idem TestToken killed it") {
		t.Fatalf("wrong() = %q, want the killed equivalent named with its test", wrong)
	}
}

// A kill that its test does not make again, run alone on the mutant, fails
// the run and counts as no kill: a test that fails now and then would
// otherwise hold a guarantee up by chance.
func TestAKillNotMadeAgainIsNoKill(t *testing.T) {
	p := protocolRun{outcomes: []outcome{
		{m: mutant{name: "fence", guarantee: "fenced"}, v: verdict{pkg: "pkg/idem", test: "TestFence"}, unrepeated: true},
	}}
	if o := p.outcomes[0]; o.result() != resultBroken {
		t.Fatalf("result() = %s, want %s", o.result(), resultBroken)
	}
	if wrong := p.wrong(); len(wrong) != 1 || !strings.Contains(wrong[0], "passed when run again alone on the mutant") {
		t.Fatalf("wrong() = %q, want the kill named as not made again", wrong)
	}
	if !strings.Contains(p.closing(), "0 killed") {
		t.Fatalf("closing() = %q, want no kill counted", p.closing())
	}
}

// killerArgs runs what killed a mutant, its top-level test alone.
func TestKillerArgsRunTheKillingTestAlone(t *testing.T) {
	p := protocolRun{testArgs: []string{"-timeout", "15m0s"}}
	got := p.killerArgs(verdict{pkg: "pkg/idem", test: "TestFence/sub"})
	want := []string{"-timeout", "15m0s", "-run", "^(TestFence)$"}
	if !slices.Equal(got, want) {
		t.Fatalf("killerArgs = %q, want %q", got, want)
	}
}
