package chaos_test

import (
	"context"
	"crypto/rand"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/chaos"
	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/template/templatetest"
)

// TestMain starts the engine, unless -short, under which the campaign skips.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(dynamotest.Main(m))
}

// lease is the functions' lease in the campaign: short, so that takeovers
// come soon, and long enough for a charge on a loaded machine.
const lease = 2 * time.Second

// TestChaos runs the campaign CHAOS_SEED, CHAOS_OPS and CHAOS_CLIENTS say
// (seed 1, 200 operations, 16 clients: make test's short campaign; make
// chaos and make soak run longer ones) and fails on any broken guarantee,
// printing the operation's whole history.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos campaign through the whole local stack: make test runs a short one, make chaos a long one")
	}
	campaign(t, envInt(t, "CHAOS_SEED", 1), int(envInt(t, "CHAOS_OPS", 200)), int(envInt(t, "CHAOS_CLIENTS", 16))) //nolint:gosec // sizes a person typed, far below int's range
}

// regressions are the seeds that ever failed, each a case of its own, run
// at the size and with the clients it failed with. make chaos runs them
// (CHAOS_REGRESSIONS=1); make test's short campaign is seed 1's first 200
// operations already, whose plans are these seeds' first 200.
var regressions = []struct {
	name         string
	seed         uint64
	ops, clients int
	whyFailed    string
}{
	{"the other request under the key raced its operation's own claim", 1, 400, 16,
		"the campaign's: the other request went after 30 s without waiting for the record, while the operation still queued for a client; it bound the key first (fixed: it waits for the record)"},
}

func TestChaosRegressions(t *testing.T) {
	if testing.Short() || os.Getenv("CHAOS_REGRESSIONS") == "" {
		t.Skip("the regression seeds run under make chaos (CHAOS_REGRESSIONS=1)")
	}
	for _, r := range regressions {
		t.Run(r.name, func(t *testing.T) { campaign(t, r.seed, r.ops, r.clients) })
	}
}

func campaign(t *testing.T, seed uint64, ops, clients int) {
	t.Helper()
	_, bin := templatetest.Built(t)
	s, err := devstack.Start(context.Background(), devstack.Options{
		BinDir: bin, TablePrefix: "chaos-" + strings.ToLower(rand.Text()[:6]) + "-",
		APIAddr: "127.0.0.1:0", ProviderAddr: "127.0.0.1:0", Lease: lease.String(), FaultProxy: true,
		Concurrency: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	stats, err := chaos.Consumer(s, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stats.Close)
	c, err := chaos.New(s, stats, chaos.Config{Seed: seed, Ops: ops, Clients: clients, Lease: lease, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	report, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range report.Violations {
		t.Error(v)
	}
	t.Log("\n" + report.Summary())
	if out := os.Getenv("CHAOS_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.Summary()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if !report.OK() {
		t.Fatalf("%d violations, seed %d", len(report.Violations), seed)
	}
}

func envInt(t *testing.T, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
