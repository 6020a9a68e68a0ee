package rie_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/measure"
	"github.com/idemkeys/idem/local/proc"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
)

// maxConcurrency is the execution environment's AWS_LAMBDA_MAX_CONCURRENCY:
// the emulator's managed-instances mode and aws-lambda-go both read it, one
// to run that many runtime workers, the other that many invoke loops.
const maxConcurrency = 64

// TestConcurrentInvocationsUnderTheEmulator runs the order function's built
// bootstrap as Lambda Managed Instances run it: one execution environment,
// one process, AWS_LAMBDA_MAX_CONCURRENCY=64, under the Runtime Interface
// Emulator (which takes its managed-instances mode from that variable). It
// starts the bootstrap once per path (Do, and DoAtomic with
// ORDER_FAST_PATH=true) and sends it API Gateway HTTP API POST /orders
// events from 1, 8, 32 and 64 clients at once, 20% of them repeating a
// recent Idempotency-Key. At every row it asserts that no request failed,
// that the orders table gained exactly one order per logical operation that
// succeeded (the order each of its 201s named), that the invocations
// overlapped in the environment (achieved concurrency, the sum of the
// latencies over the elapsed time, above 1.5 from 8 clients: a property of
// the runtime, not a time gate) and that the emulator ran one bootstrap
// process. make test runs it small; make bench runs
// CONCURRENCY_RIE_REQUESTS=1200 and writes BENCH_OUT.
func TestConcurrentInvocationsUnderTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("a concurrency measurement under the Lambda RIE: make test runs it small, make bench in full")
	}
	n := measure.EnvInt("CONCURRENCY_RIE_REQUESTS", 64)
	if os.Geteuid() != 0 {
		t.Skip("the emulator's managed-instances mode needs root (rie.Options.MaxConcurrency: a mount namespace for /var/task, the function run as user 993)")
	}
	tpl, bin, emulator := built(t)
	fn, err := tpl.Function("OrderFunction")
	if err != nil {
		t.Fatal(err)
	}
	endpoint, engine, err := dynamo.Ensure(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if engine != nil {
		t.Cleanup(func() { _ = engine.Stop() }) // its error is always nil
	}
	db := dynamo.NewClient(endpoint)
	var report strings.Builder
	fmt.Fprintf(&report, "Engine: DynamoDB Local 3.3.1, warmed first with %d requests per path (unmeasured). The order function's built bootstrap under the Runtime Interface Emulator in its managed-instances mode, AWS_LAMBDA_MAX_CONCURRENCY=%d: one execution environment, one process (asserted), started once per path; %d API Gateway HTTP API POST /orders events per row, 20%% duplicates; "+
		"one order per logical operation and no failed request asserted at every row. Latencies are the invocations the environment took; achieved concurrency is their sum over the row's time (asserted above 1.5 from 8 at once); "+
		"a send the emulator refused for want of an idle runtime worker (it has no queue) was sent again:\n\n", measure.EnvInt("LOAD_WARMUP", 0), maxConcurrency, n)
	fmt.Fprintln(&report, "| invocations at once | path | requests/s | p50 ms | p99 ms | achieved concurrency | orders | logical operations that succeeded | orders per key | sends refused (Runtime.Unavailable), resent |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|---|---|---|---|")
	rows := map[string][]row{}
	for _, path := range []string{"Do", "DoAtomic"} {
		rows[path] = runEnvironment(t, environment{db, endpoint, tpl, fn, bin, emulator}, path, n)
	}
	for i, c := range concurrencyLevels {
		for _, path := range []string{"Do", "DoAtomic"} {
			r := rows[path][i]
			fmt.Fprintf(&report, "| %d | %s | %.0f | %.1f | %.1f | %.1f | %d | %d | %.0f | %d |\n", c, path, r.throughput(), r.pct(50), r.pct(99), r.achieved(), r.orders, r.succeeded, float64(r.orders)/float64(r.succeeded), r.refused)
		}
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var concurrencyLevels = []int{1, 8, 32, 64}

// environment is what an execution environment runs on: the engine (its
// client and endpoint), the template and its order function, the built
// bootstrap and the emulator.
type environment struct {
	db            *dynamodb.Client
	endpoint      string
	tpl           *template.Template
	fn            *template.Function
	bin, emulator string
}

// runEnvironment starts one execution environment of e.fn for path on fresh
// tables, drives it at each level in turn with n requests and returns the
// rows, each checked.
func runEnvironment(t *testing.T, e environment, path string, n int) []row {
	t.Helper()
	db, endpoint, tpl, fn, bin, emulator := e.db, e.endpoint, e.tpl, e.fn, e.bin, e.emulator
	ctx := context.Background()
	tables := map[string]string{}
	var defs []template.Table
	for _, id := range []string{"IdempotencyTable", "OrdersTable"} {
		def, err := tpl.Table(id)
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, def)
	}
	prefix := "rie-concurrency-" + strings.ToLower(rand.Text()[:8]) + "-"
	err := dynamo.CreateTables(ctx, db, defs, prefix, func(tb template.Table, name string) {
		t.Cleanup(func() { _, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name}) }) // best effort: a table left behind costs a test engine only space
		tables[tb.LogicalID] = name
	})
	if err != nil {
		t.Fatal(err)
	}
	env, err := fn.LocalEnv(tables, map[string]string{"AWS_REGION": dynamo.Region, "AWS_ACCESS_KEY_ID": dynamo.AccessKey, "AWS_SECRET_ACCESS_KEY": dynamo.SecretKey,
		"DYNAMODB_ENDPOINT": endpoint, "ORDER_FAST_PATH": strconv.FormatBool(path == "DoAtomic")})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rie.Start(ctx, emulator, fn.Bootstrap(bin), rie.Options{Env: env, Timeout: time.Duration(fn.Timeout) * time.Second, MaxConcurrency: maxConcurrency})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	client := newOrderClient(t, fn, rt)
	// The first invocation waits for the function's init; it is not timed.
	if _, err := rt.Invoke(ctx, client.event("GET", "/orders/ord_none", "")); err != nil {
		t.Fatalf("%s: the first invocation: %v\n%s", path, err, rt.Logs())
	}
	var rows []row
	orders := ordersTable{db, tables["OrdersTable"], map[string]bool{}}
	// A new engine's JVM compiles its hot paths over its first few
	// thousand requests (functions/order's warmUp): LOAD_WARMUP requests
	// at 32 at once go first, checked like a row, not reported.
	if w := measure.EnvInt("LOAD_WARMUP", 0); w > 1 {
		keys, _ := measure.Keys(w, 0.2, 499, "warm-")
		r := client.drive(keys, 32)
		if r.failed > 0 {
			t.Fatalf("%s, warming up: %d of %d requests failed, the first: %s\n%s", path, r.failed, w, r.firstFailure, rt.Logs())
		}
		checkOrders(t, orders, &r, path, 32)
	}
	for _, c := range concurrencyLevels {
		keys, _ := measure.Keys(n, 0.2, 500+uint64(c), fmt.Sprintf("c%d-", c)) //nolint:gosec // G115: c is one of the few positive concurrency levels
		r := client.drive(keys, c)
		if r.failed > 0 {
			t.Fatalf("%s, %d at once: %d of %d requests failed, the first: %s\n%s", path, c, r.failed, n, r.firstFailure, rt.Logs())
		}
		checkOrders(t, orders, &r, path, c)
		if c >= 8 && r.achieved() <= 1.5 {
			t.Fatalf("%s, %d at once: achieved concurrency %.2f (latencies summed over the elapsed time): the environment ran the invocations one at a time", path, c, r.achieved())
		}
		checkOneProcess(t, rt, fn.Bootstrap(bin), path, c)
		rows = append(rows, r)
	}
	return rows
}

// checkOneProcess fails t unless the emulator has one child, the bootstrap:
// every invocation ran in one process.
func checkOneProcess(t *testing.T, rt *rie.Runtime, bootstrap, path string, c int) {
	t.Helper()
	kids := proc.Children(rt.Pid())
	if len(kids) != 1 {
		t.Fatalf("%s, %d at once: the emulator has %d children %v, want the one bootstrap", path, c, len(kids), kids)
	}
	// The child sees the bootstrap at /var/task (rie.Options.MaxConcurrency):
	// compare the files, not their names.
	exe, err := os.Stat("/proc/" + strconv.Itoa(kids[0]) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(exe, want) {
		t.Fatalf("%s, %d at once: the emulator's child %d runs another program than the bootstrap %s", path, c, kids[0], bootstrap)
	}
}

// ordersTable is the orders table checkOrders reads, and seen the orders
// it held before a row.
type ordersTable struct {
	db    *dynamodb.Client
	table string
	seen  map[string]bool
}

// checkOrders fails t unless the orders the table gained in the row are
// exactly the ones its 201s named, one per logical operation that
// succeeded; it records them in r and o.seen.
func checkOrders(t *testing.T, o ordersTable, r *row, path string, c int) {
	t.Helper()
	db, table, seen := o.db, o.table, o.seen
	gained := map[string]bool{}
	var start map[string]types.AttributeValue
	for {
		out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range out.Items {
			id := item["order_id"].(*types.AttributeValueMemberS).Value
			if !seen[id] {
				gained[id] = true
				seen[id] = true
			}
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	named := map[string]bool{}
	for op, id := range r.orderOf {
		if named[id] {
			t.Fatalf("%s, %d at once: order %s named by two logical operations (one is %s)", path, c, id, op)
		}
		named[id] = true
		if !gained[id] {
			t.Fatalf("%s, %d at once: %s's 201 named order %s, which the table did not gain", path, c, op, id)
		}
	}
	if len(gained) != len(named) {
		t.Fatalf("%s, %d at once: the table gained %d orders for %d logical operations that succeeded", path, c, len(gained), len(named))
	}
	r.orders, r.succeeded = len(gained), len(named)
}

// orderClient builds the order function's API Gateway events and invokes
// its environment.
type orderClient struct {
	t      *testing.T
	fn     *template.Function
	rt     *rie.Runtime
	claims map[string]string
}

func newOrderClient(t *testing.T, fn *template.Function, rt *rie.Runtime) *orderClient {
	// The scope comes from the claim the template configures, as the JWT
	// authorizer would pass it.
	return &orderClient{t: t, fn: fn, rt: rt, claims: map[string]string{fn.Env["SCOPE_CLAIM"]: "rie-concurrency"}}
}

const teaOrder = `{"items":[{"sku":"tea","quantity":2}],"note":"green"}`

// event is the HTTP API payload 2.0 event for method and path, with an
// Idempotency-Key when key is not empty.
func (c *orderClient) event(method, path, key string) []byte {
	c.t.Helper()
	body := ""
	if method == "POST" {
		body = teaOrder
	}
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	route, params, ok := apigw.Match(c.fn.Routes, method, path)
	if !ok {
		c.t.Fatalf("%s %s: no route of %s", method, path, c.fn.LogicalID)
	}
	ev, err := json.Marshal(apigw.Event(r, []byte(body), route, params, c.claims))
	if err != nil {
		c.t.Fatal(err)
	}
	return ev
}

// drive sends keys as POST /orders events from clients goroutines at once
// and returns the row, its orders not yet counted.
func (c *orderClient) drive(keys []string, clients int) row {
	events := make([][]byte, len(keys))
	for i, k := range keys {
		events[i] = c.event("POST", "/orders", k)
	}
	r := row{latencies: make([]time.Duration, len(keys)), orderOf: map[string]string{}}
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		if r.failed++; r.failed == 1 {
			r.firstFailure = fmt.Sprintf(format, args...)
		}
	}
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for i := range next {
				out, took, refused, err := c.invoke(events[i])
				resp, perr := apigw.Response(out)
				var o struct{ ID string }
				if err == nil && perr == nil && resp.StatusCode == 201 {
					perr = json.Unmarshal([]byte(resp.Body), &o)
				}
				mu.Lock()
				r.latencies[i], r.refused = took, r.refused+refused
				switch {
				case err != nil:
					fail("%s: %v", keys[i], err)
				case perr != nil || resp.StatusCode >= 500:
					fail("%s: %d %s %v", keys[i], resp.StatusCode, resp.Body, perr)
				case resp.StatusCode != 201: // 409 while the key's first request is in flight
				case o.ID == "":
					fail("%s: a 201 without an order: %s", keys[i], resp.Body)
				case r.orderOf[keys[i]] != "" && r.orderOf[keys[i]] != o.ID:
					fail("%s: 201s naming two orders, %s and %s", keys[i], r.orderOf[keys[i]], o.ID)
				default:
					r.orderOf[keys[i]] = o.ID
				}
				mu.Unlock()
			}
		})
	}
	for i := range keys {
		next <- i
	}
	close(next)
	wg.Wait()
	r.elapsed = time.Since(start)
	return r
}

// invoke sends ev until the environment takes it, and returns the answer,
// how long the invocation that was taken took, and how many sends were
// refused first. The emulator's managed-instances mode has no queue: it
// refuses an invoke at once, before any function code sees it, when none of
// its runtime workers waits at /next (Runtime.Unavailable), and a worker is
// back there only after its last response went out, so a client that sends
// again at once can beat it; Lambda's router would hold the invoke for a
// free slot, which a resend after a pause stands in for.
func (c *orderClient) invoke(ev []byte) (out []byte, took time.Duration, refused int, err error) {
	for {
		t0 := time.Now()
		out, err = c.rt.Invoke(context.Background(), ev)
		took = time.Since(t0)
		if err == nil || errors.Is(err, rie.ErrFunction) || !bytes.Contains(out, []byte(`"errorType":"Runtime.Unavailable"`)) || refused == 1000 {
			return out, took, refused, err
		}
		refused++
		time.Sleep(time.Duration(min(refused, 10)) * time.Millisecond)
	}
}

// row is one level's results on one path.
type row struct {
	latencies         []time.Duration
	elapsed           time.Duration
	failed            int
	firstFailure      string
	refused           int               // sends refused with Runtime.Unavailable, then sent again (orderClient.invoke)
	orderOf           map[string]string // a logical operation's order, as its 201s name it
	orders, succeeded int
}

func (r row) throughput() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

func (r row) pct(p int) float64 {
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	return float64(s[min(len(s)-1, len(s)*p/100)]) / float64(time.Millisecond)
}

// achieved is how many invocations ran at once on average: the time spent
// in invocations over the time the row took. One at a time gives 1 at
// most, whatever the clients.
func (r row) achieved() float64 {
	var sum time.Duration
	for _, l := range r.latencies {
		sum += l
	}
	return float64(sum) / float64(r.elapsed)
}
