//go:build unix

package dynamolocal_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idemtest/dynamolocal"
)

// The tests run no JVM: the java on their PATH is this test binary again (a
// script that execs it with fakeEnv set), and the jar it is handed says what
// that fake engine does, one of the modes of fakeEngine. It runs in the
// jar's directory, as the real engine does, and records there what it was
// run with ("calls", a line a start) and its pid ("pid", written whole at
// once: a reader never sees it empty).
const (
	fakeEnv    = "DYNAMOLOCAL_FAKE_JAVA"
	starterEnv = "DYNAMOLOCAL_STARTER" // the jar a helper process starts, then exits without Stop
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		os.Exit(fakeEngine(os.Args[1:]))
	}
	if os.Getenv(probeEnv) != "" {
		os.Exit(probe())
	}
	if jar := os.Getenv(starterEnv); jar != "" {
		if _, err := dynamolocal.Start(context.Background(), jar, dynamolocal.Options{}); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		os.Exit(0) // as a test binary does that dies before it stops its engine
	}
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	bin, err := os.MkdirTemp("", "dynamolocal-java-")
	if err != nil {
		panic(err)
	}
	script := "#!/bin/sh\n" + fakeEnv + "=1 exec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "java"), []byte(script), 0o755); err != nil {
		panic(err)
	}
	if err := os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(bin) // best effort: a temporary directory
	os.Exit(code)
}

// fakeEngine is what the fake java does with args, as its jar's word says:
// serve (answer every request with 400, as DynamoDB Local answers a bare
// GET), child (serve, with a child process of its own), stubborn (serve,
// ignoring SIGTERM), old (fail as a Java older than 17 does) or mute (never
// listen).
func fakeEngine(args []string) int {
	var jar, port string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "-jar":
			jar = args[i+1]
		case "-port":
			port = args[i+1]
		}
	}
	f, _ := os.OpenFile("calls", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	fmt.Fprintln(f, strings.Join(args, " "))
	f.Close()
	writeWhole("pid", os.Getpid())
	word, _ := os.ReadFile(jar)
	switch mode := strings.TrimSpace(string(word)); mode {
	case "old":
		fmt.Fprintln(os.Stderr, "Error: LinkageError occurred while loading main class com.amazonaws.services.dynamodbv2.local.main.ServerRunner\n\tjava.lang.UnsupportedClassVersionError: compiled by a more recent version of the Java Runtime")
		return 1
	case "mute":
		time.Sleep(time.Hour)
		return 1
	case "child":
		child := exec.Command("sleep", "600")
		if err := child.Start(); err != nil {
			fmt.Println(err)
			return 1
		}
		writeWhole("child", child.Process.Pid)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
	}
	l, err := net.Listen("tcp", ":"+port) // every address, as DynamoDB Local listens
	if err != nil {
		fmt.Println("fake engine: cannot listen:", err)
		return 1
	}
	fmt.Println("fake engine listening on", port)
	err = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	fmt.Println("fake engine:", err) // it serves until it is stopped
	return 1
}

// writeWhole writes pid into name by a rename, so that a reader polling for
// name never reads it before the pid is in it.
func writeWhole(name string, pid int) {
	err := os.WriteFile(name+".tmp", []byte(strconv.Itoa(pid)), 0o644)
	if err == nil {
		err = os.Rename(name+".tmp", name)
	}
	if err != nil { // the test polling for name then fails with this in the output it shows
		fmt.Println("fake engine: cannot write", name+":", err)
	}
}

// jar is a DynamoDBLocal.jar in a directory of its own that makes the fake
// engine do mode.
func jar(t *testing.T, mode string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "DynamoDBLocal.jar")
	if err := os.WriteFile(path, []byte(mode), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// recorded reads what the fake engine beside jar wrote into name.
func recorded(t *testing.T, jar, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(jar), name))
	if err != nil {
		t.Fatalf("the fake engine wrote no %s: %v", name, err)
	}
	return strings.TrimSpace(string(b))
}

func pid(t *testing.T, jar, name string) int {
	t.Helper()
	p, err := strconv.Atoi(recorded(t, jar, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// alive: the process exists and is no zombie (read from /proc where there
// is one).
func alive(pid int) bool {
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return len(f) > 0 && f[0] != "Z"
	} else if _, err := os.Stat("/proc/self"); err == nil {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// dies waits for pid to go, for at most what.
func dies(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // best effort, before the test fails for it
			t.Fatalf("%s (pid %d) is still running", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartRunsTheJarInMemoryWithOneDatabaseAndWaitsForItsAnswer(t *testing.T) {
	t.Parallel()
	j := jar(t, "serve")
	log, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	e, err := dynamolocal.Start(context.Background(), j, dynamolocal.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	engine := pid(t, j, "pid")
	if want := "http://127.0.0.1:" + strconv.Itoa(e.Port); e.Endpoint != want || e.Port == 0 {
		t.Errorf("Endpoint %q, Port %d; want %s on the port the kernel chose", e.Endpoint, e.Port, want)
	}
	if want := "127.0.0.1:" + strconv.Itoa(e.Port); namespaces(t) && e.Listens != want {
		t.Errorf("Listens %q, want %s: the engine in a namespace of its own", e.Listens, want)
	}
	if err := dynamolocal.Ping(context.Background(), e.Endpoint); err != nil {
		t.Errorf("the engine Start returned does not answer: %v", err)
	}
	dir := filepath.Dir(j)
	want := "-Djava.library.path=" + filepath.Join(dir, "DynamoDBLocal_lib") + " -jar " + j + " -inMemory -sharedDb -disableTelemetry -port " + strconv.Itoa(e.Port)
	if got := recorded(t, j, "calls"); got != want {
		t.Errorf("java ran with\n%s\nwant\n%s", got, want)
	}
	e.Stop()
	if out, _ := os.ReadFile(log.Name()); !strings.Contains(string(out), "fake engine listening on "+strconv.Itoa(e.Port)) {
		t.Errorf("Log got %q, not the engine's output", out)
	}
	if alive(engine) {
		t.Errorf("the engine (pid %d) runs on after Stop returned", engine)
	}
	if dynamolocal.Ping(context.Background(), e.Endpoint) == nil {
		t.Error("the engine still answers after Stop")
	}
	e.Stop() // again: it returns
	var none *dynamolocal.Engine
	none.Stop()
}

// Stop ends the engine's process group, and an engine that ignores SIGTERM
// too (5 seconds later), in a namespace of its own or not.
func TestStopEndsTheEngineAndWhatItStarted(t *testing.T) {
	for _, tc := range []struct {
		mode        string
		hostNetwork bool
	}{{"child", false}, {"stubborn", false}, {"child", true}, {"stubborn", true}} {
		mode := tc.mode
		t.Run(fmt.Sprintf("%s, host network %v", mode, tc.hostNetwork), func(t *testing.T) {
			t.Parallel()
			j := jar(t, mode)
			e, err := dynamolocal.Start(context.Background(), j, dynamolocal.Options{HostNetwork: tc.hostNetwork})
			if err != nil {
				t.Fatal(err)
			}
			e.Stop()
			if engine := pid(t, j, "pid"); alive(engine) {
				t.Errorf("the engine (pid %d) runs on after Stop returned", engine)
			}
			if mode == "child" {
				dies(t, pid(t, j, "child"), "the engine's child, after Stop")
			}
		})
	}
}

// A port is drawn again when the engine does not come up on it, three times
// in all; a port given is tried once. In a namespace of its own the engine
// is not even started on a port taken: the forwarder cannot listen on it.
func TestAPortTakenBeforeTheEngineBindsItIsDrawnAgain(t *testing.T) {
	t.Parallel()
	busy, free := boundPort(t), freePort(t)
	cases := []struct {
		name        string
		hostNetwork bool
		port        int   // Options.Port
		draws       []int // what FreePort hands out, in turn
		starts      int
		on          int    // the port it comes up on; 0: it fails
		says        string // in the error when it fails
	}{
		{"taken, then free", true, 0, []int{busy, free}, 2, free, ""},
		{"taken every time", true, 0, []int{busy, busy, busy, free}, 3, 0, "cannot listen"},
		{"a port given, taken", true, busy, []int{free}, 1, 0, "cannot listen"},
		{"in a namespace: taken, then free", false, 0, []int{busy, free}, 1, free, ""},
		{"in a namespace: taken every time", false, 0, []int{busy, busy, busy, free}, 0, 0, "address already in use"},
		{"in a namespace: a port given, taken", false, busy, []int{free}, 0, 0, "address already in use"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.hostNetwork && !namespaces(t) {
				t.Skip("no network namespace here")
			}
			j := jar(t, "serve")
			var mu sync.Mutex
			draws := tc.draws
			o := dynamolocal.Options{Port: tc.port, HostNetwork: tc.hostNetwork, FreePort: func() (int, error) {
				mu.Lock()
				defer mu.Unlock()
				p := draws[0]
				draws = draws[1:]
				return p, nil
			}}
			e, err := dynamolocal.Start(context.Background(), j, o)
			defer e.Stop()
			calls, _ := os.ReadFile(filepath.Join(filepath.Dir(j), "calls"))
			if n := strings.Count(string(calls), "\n"); n != tc.starts {
				t.Errorf("the engine started %d times, want %d", n, tc.starts)
			}
			if tc.on == 0 {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("Start: %v; want an error saying %q", err, tc.says)
				}
				return
			}
			if err != nil || e.Port != tc.on {
				t.Fatalf("Start: %+v, %v; want an engine on %d", e, err, tc.on)
			}
		})
	}
}

// freePort is a loopback port free now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// The engine in its namespace answers on 127.0.0.1 and on none of this
// machine's other addresses; with the host's network (the control, as
// where no namespace can be had) it answers on them too, and so it does in
// its namespace when Options.Host asks for every address ("0.0.0.0", for
// containers).
func TestTheEngineAnswersOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	others := otherAddresses(t)
	if len(others) == 0 {
		t.Skip("this machine has no address but loopback")
	}
	if !namespaces(t) {
		t.Skip("no network namespace here: the engine listens on every address, as Start says (TestWithoutANamespaceStartSaysWhereTheEngineListens)")
	}
	for _, tc := range []struct {
		hostNetwork bool
		host        string
		elsewhere   bool // answers on the other addresses
		listens     string
	}{{false, "", false, "127.0.0.1:"}, {true, "", true, "*:"}, {false, "0.0.0.0", true, "0.0.0.0:"}} {
		t.Run(fmt.Sprintf("host network %v, host %q", tc.hostNetwork, tc.host), func(t *testing.T) {
			e, err := dynamolocal.Start(context.Background(), jar(t, "serve"), dynamolocal.Options{HostNetwork: tc.hostNetwork, Host: tc.host, Log: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Stop()
			if e.Listens != tc.listens+strconv.Itoa(e.Port) || e.Endpoint != "http://127.0.0.1:"+strconv.Itoa(e.Port) {
				t.Errorf("Listens %q, Endpoint %q; want %s%d, on 127.0.0.1", e.Listens, e.Endpoint, tc.listens, e.Port)
			}
			if err := dynamolocal.Ping(context.Background(), "http://127.0.0.1:"+strconv.Itoa(e.Port)); err != nil {
				t.Fatalf("no answer on 127.0.0.1: %v", err)
			}
			for _, ip := range others {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				err := dynamolocal.Ping(ctx, "http://"+net.JoinHostPort(ip, strconv.Itoa(e.Port)))
				cancel()
				if answered := err == nil; answered != tc.elsewhere {
					t.Errorf("on %s: answered %v (%v), want %v (Listens %q)", ip, answered, err, tc.elsewhere, e.Listens)
				}
			}
		})
	}
}

// otherAddresses are this machine's IPv4 addresses but loopback, as
// `ip -4 addr` shows them.
func otherAddresses(t *testing.T) []string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			out = append(out, n.IP.String())
		}
	}
	return out
}

// Where the engine has no namespace of its own, Start says where it
// listens: Listens, and a line on Log.
func TestWithoutANamespaceStartSaysWhereTheEngineListens(t *testing.T) {
	t.Parallel()
	var log strings.Builder
	e, err := dynamolocal.Start(context.Background(), jar(t, "serve"), dynamolocal.Options{HostNetwork: true, Log: &syncWriter{w: &log}})
	if err != nil {
		t.Fatal(err)
	}
	e.Stop()
	want := "*:" + strconv.Itoa(e.Port)
	if e.Listens != want {
		t.Errorf("Listens %q, want %q", e.Listens, want)
	}
	if !strings.Contains(log.String(), "DynamoDB Local listens on every address of this machine ("+want+")") {
		t.Errorf("the log says %q; want where the engine listens", log.String())
	}
}

// Without a Log, that line goes to standard error. Not parallel: it
// replaces os.Stderr.
func TestWithoutANamespaceOrALogStartSaysItOnStandardError(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	e, err := dynamolocal.Start(context.Background(), jar(t, "serve"), dynamolocal.Options{HostNetwork: true})
	os.Stderr = stderr
	w.Close()
	said, _ := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	e.Stop()
	if !strings.Contains(string(said), "DynamoDB Local listens on every address of this machine (*:"+strconv.Itoa(e.Port)+")") {
		t.Errorf("standard error got %q; want where the engine listens", said)
	}
}

// syncWriter is a Writer for the engine's output and Start's own lines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// boundPort is a loopback port that a socket of this process holds without
// listening: the engine cannot bind it, and a client's connect is refused.
func boundPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}

func TestAJavaOlderThan17IsNamed(t *testing.T) {
	t.Parallel()
	_, err := dynamolocal.Start(context.Background(), jar(t, "old"), dynamolocal.Options{})
	if err == nil || !strings.Contains(err.Error(), "needs Java 17 or later, and the java on PATH is older") || !strings.Contains(err.Error(), "openjdk-17-jre-headless") {
		t.Fatalf("Start: %v; want the Java it needs named", err)
	}
}

// Without java, Java and Start say what to install. Not parallel: it
// changes PATH.
func TestNoJavaIsNamed(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, javaErr := dynamolocal.Java()
	_, startErr := dynamolocal.Start(context.Background(), jar(t, "serve"), dynamolocal.Options{})
	for _, err := range []error{javaErr, startErr} {
		if err == nil || !strings.Contains(err.Error(), "java is not on PATH") || !strings.Contains(err.Error(), "apt-get install openjdk-17-jre-headless") {
			t.Errorf("got %v; want what to install", err)
		}
	}
}

func TestAnEngineThatDoesNotAnswerIsStoppedWhenCtxEnds(t *testing.T) {
	for _, hostNetwork := range []bool{false, true} {
		t.Run(fmt.Sprintf("host network %v", hostNetwork), func(t *testing.T) {
			t.Parallel()
			j := jar(t, "mute")
			ctx, cancel := context.WithCancel(context.Background())
			go func() { // once the engine runs
				for _, err := os.Stat(filepath.Join(filepath.Dir(j), "pid")); err != nil; _, err = os.Stat(filepath.Join(filepath.Dir(j), "pid")) {
					time.Sleep(10 * time.Millisecond)
				}
				cancel()
			}()
			draws := 0
			// A port nothing answers on: bound, and not listening, for an
			// engine of the host's network; free for the forwarder of one
			// in a namespace, behind which the engine does not answer.
			port := boundPort(t)
			if !hostNetwork {
				port = freePort(t)
			}
			_, err := dynamolocal.Start(ctx, j, dynamolocal.Options{HostNetwork: hostNetwork, FreePort: func() (int, error) { draws++; return port, nil }})
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "did not answer") {
				t.Fatalf("Start: %v; want context.Canceled, with the engine named", err)
			}
			if engine := pid(t, j, "pid"); alive(engine) {
				t.Errorf("the engine (pid %d) runs on after Start gave up on it", engine)
			}
			if draws != 1 {
				t.Errorf("%d ports drawn, want 1: an ended ctx draws no other", draws)
			}
		})
	}
}

func TestTheEngineDiesWithTheProcessThatStartedIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux ties a child's life to its parent's")
	}
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	j := jar(t, "serve")
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), starterEnv+"="+j)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the starter: %v\n%s", err, out)
	}
	dies(t, pid(t, j, "pid"), "the engine of a process that exited without Stop")
}

func TestPingTakesAnyHTTPAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	if err := dynamolocal.Ping(context.Background(), srv.URL); err != nil {
		t.Errorf("Ping of a server answering 400: %v", err)
	}
	srv.Close()
	if dynamolocal.Ping(context.Background(), srv.URL) == nil {
		t.Error("Ping of a closed port answered nil")
	}
}
