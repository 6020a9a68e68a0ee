package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/functions/internal/httpx"
	"github.com/idemkeys/idem/internal/httpapi"
	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/measure"
	"github.com/idemkeys/idem/local/proc"
	"github.com/idemkeys/idem/pkg/idem"
)

// TestLoad drives POST /orders on the local engine three ways, with the same
// requests: plain (the same create, no pkg/idem), claim-then-commit (Do) and
// one transaction (DoAtomic); then checks that each idempotent way made one
// order per logical operation. make test runs it small; make bench runs it
// at LOAD_REQUESTS=10000 with LOAD_SWEEP=1 and writes BENCH_OUT. Throughput
// is reported as ratios to plain measured in the same rounds, never asserted.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load measurement, the handler under 32 clients: make test runs it small, make bench in full")
	}
	n := measure.EnvInt("LOAD_REQUESTS", 300)
	clients := measure.EnvInt("LOAD_CLIENTS", 32)
	rounds := measure.EnvInt("LOAD_ROUNDS", 3)
	warm := warmUp(t, variants, clients)
	all, ratios := compare(t, n, clients, rounds, 0)
	var report strings.Builder
	fmt.Fprintf(&report, "Engine: %s, warmed first with %d requests to Do and 500 to each handler, unmeasured (%s). POST /orders, %d requests per handler in %d rounds (the handlers' order rotating), %d concurrent clients, 20%% duplicates (a repeat of one of the last 64 keys, often in flight)\n\n", engineVersion, warmUpRequests(), warm, len(all["plain"].latencies), rounds, clients)
	fmt.Fprintln(&report, "| handler | requests/s | p50 ms | p99 ms | throughput vs plain (median, min–max over rounds) | orders | logical operations |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|---|")
	for _, v := range variants {
		res := all[v]
		fmt.Fprintf(&report, "| %s | %.0f | %.1f | %.1f | %s | %d | %d |\n", v, res.throughput(), res.pct(50), res.pct(99), measure.Spread(ratios[v]), res.orders, res.ops)
	}
	if sweep := os.Getenv("LOAD_SWEEP"); sweep != "" { // "1" for both, or "clients" or "records"
		if sweep != "records" {
			sweepClients(t, &report, measure.EnvInt("LOAD_SWEEP_REQUESTS", 600), rounds)
		}
		if sweep != "clients" {
			sweepRecords(t, &report, measure.EnvInt("LOAD_RECORDS_REQUESTS", 1500), rounds)
		}
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var variants = []string{"plain", "Do", "DoAtomic"}

// compare sends n requests to each variant in rounds, the variants' order
// rotating from round to round, each round on fresh tables with its own
// requests; it returns each variant's results and its throughput over
// plain's, one ratio per round.
func compare(t *testing.T, n, clients, rounds int, seed uint64) (map[string]*loadResult, map[string][]float64) {
	t.Helper()
	all, ratios := map[string]*loadResult{}, map[string][]float64{}
	for _, v := range variants {
		all[v] = &loadResult{}
	}
	for r := range rounds {
		p := newPlan(max(n/rounds, 1), 0.2, seed+uint64(r), "")
		rate := map[string]float64{}
		for i := range variants {
			v := variants[(i+r)%len(variants)]
			res := runLoad(t, v, p, clients, "")
			all[v].merge(res)
			rate[v] = res.throughput()
		}
		for _, v := range variants {
			ratios[v] = append(ratios[v], rate[v]/rate["plain"])
		}
	}
	return all, ratios
}

// checkGuarantee fails the test where an idempotent variant made other than
// one order per logical operation that succeeded, or any request failed.
func checkGuarantee(t *testing.T, v string, res *loadResult) {
	t.Helper()
	if v != "plain" && v != driverAlone && res.orders != res.succeededOps {
		t.Fatalf("%s: %d orders for %d logical operations that succeeded", v, res.orders, res.succeededOps)
	}
	if res.errors > 0 {
		t.Fatalf("%s: %d requests failed outright", v, res.errors)
	}
}

// sweepClients compares the three handlers at 1, 8, 32 and 128 clients.
func sweepClients(t *testing.T, report *strings.Builder, n, rounds int) {
	t.Helper()
	fmt.Fprintf(report, "\nEngine: %s. By concurrent clients, %d requests per handler and row in %d rounds (order rotating); throughput vs plain, median (min–max over rounds):\n\n", engineVersion, n, rounds)
	fmt.Fprintln(report, "| clients | plain requests/s | plain p50 ms | Do requests/s | Do p50 ms | Do vs plain | DoAtomic requests/s | DoAtomic p50 ms | DoAtomic vs plain |")
	fmt.Fprintln(report, "|---|---|---|---|---|---|---|---|---|")
	for _, c := range []int{1, 8, 32, 128} {
		all, ratios := compare(t, n, c, rounds, 100+uint64(c)) //nolint:gosec // G115: c is one of the row's few positive counts
		fmt.Fprintf(report, "| %d | %.0f | %.1f | %.0f | %.1f | %s | %.0f | %.1f | %s |\n", c,
			all["plain"].throughput(), all["plain"].pct(50), all["Do"].throughput(), all["Do"].pct(50), measure.Spread(ratios["Do"]),
			all["DoAtomic"].throughput(), all["DoAtomic"].pct(50), measure.Spread(ratios["DoAtomic"]))
	}
}

// sweepRecords runs Do against idempotency tables already holding 1,000,
// 10,000 and 100,000 completed records, in rounds that rotate the sizes'
// order, each round with keys of its own.
func sweepRecords(t *testing.T, report *strings.Builder, n, rounds int) {
	t.Helper()
	sizes := []int{1000, 10000, 100000}
	raw := dynamotest.Client(t, func(o *dynamodb.Options) { o.RetryMaxAttempts = 10 })
	tables := map[int]string{}
	for _, size := range sizes {
		tables[size] = dynamotest.Table(t, raw, "IdempotencyTable")
		dynamotest.Fill(t, raw, tables[size], size, time.Now().Add(24*time.Hour).Unix())
	}
	all, rates := map[int]*loadResult{}, map[int][]float64{}
	for r := range rounds {
		p := newPlan(max(n/rounds, 1), 0.2, 200+uint64(r), "r"+strconv.Itoa(r)+"-")
		for i := range sizes {
			size := sizes[(i+r)%len(sizes)]
			res := runLoad(t, "Do", p, 32, tables[size])
			if all[size] == nil {
				all[size] = &loadResult{}
			}
			all[size].merge(res)
			rates[size] = append(rates[size], res.throughput())
		}
	}
	fmt.Fprintf(report, "\nEngine: %s. Do, %d requests per size in %d rounds (sizes' order rotating), 32 clients, by completed records already in the idempotency table:\n\n", engineVersion, n, rounds)
	fmt.Fprintln(report, "| records | requests/s | p50 ms | p99 ms | throughput vs 1,000 records (median, min–max over rounds) |")
	fmt.Fprintln(report, "|---|---|---|---|---|")
	for _, size := range sizes {
		ratios := make([]float64, rounds)
		for r := range rounds {
			ratios[r] = rates[size][r] / rates[sizes[0]][r]
		}
		res := all[size]
		fmt.Fprintf(report, "| %d | %.0f | %.1f | %.1f | %s |\n", size, res.throughput(), res.pct(50), res.pct(99), measure.Spread(ratios))
	}
}

// plan is the sequence of requests: the key of each, and how many logical
// operations (distinct keys) it holds.
type plan struct {
	keys []string
	ops  int
}

func newPlan(n int, dup float64, seed uint64, prefix string) plan {
	keys, ops := measure.Keys(n, dup, seed, prefix)
	return plan{keys: keys, ops: ops}
}

type loadResult struct {
	latencies    []time.Duration
	elapsed      time.Duration
	errors       int
	orders, ops  int
	succeededOps int
	// Where the time went: the handler's DynamoDB attempts (the SDK's
	// retries included) by answer, their time on the wire summed, and the
	// CPU this process and the engine used while the requests ran.
	answers              map[string]int
	connections          int
	wire                 time.Duration
	clientCPU, engineCPU time.Duration
	// What this process allocated while the requests ran: objects, bytes.
	mallocs, allocated uint64
}

func (r *loadResult) merge(o *loadResult) {
	r.latencies = append(r.latencies, o.latencies...)
	r.elapsed += o.elapsed
	r.errors += o.errors
	r.orders += o.orders
	r.ops += o.ops
	r.succeededOps += o.succeededOps
	if r.answers == nil {
		r.answers = map[string]int{}
	}
	for k, v := range o.answers {
		r.answers[k] += v
	}
	r.wire += o.wire
	r.connections += o.connections
	r.clientCPU += o.clientCPU
	r.engineCPU += o.engineCPU
	r.mallocs += o.mallocs
	r.allocated += o.allocated
}

// perRequest is d over the requests, in µs.
func (r *loadResult) perRequest(d time.Duration) float64 {
	return float64(d) / float64(time.Microsecond) / float64(len(r.latencies))
}

// attempts is the DynamoDB attempts per request, and those that did not
// answer as the path means them to (a conflict with a transaction in
// flight, a throttle: what the SDK or the library sent again).
func (r *loadResult) attempts() (all, again float64) {
	for k, v := range r.answers {
		all += float64(v)
		if strings.Contains(k, "Conflict") || strings.Contains(k, "Throttl") || strings.Contains(k, "InProgress") || strings.Contains(k, "transport") || strings.Contains(k, " 5") {
			again += float64(v)
		}
	}
	return all / float64(len(r.latencies)), again / float64(len(r.latencies))
}

func (r *loadResult) throughput() float64 {
	return float64(len(r.latencies)) / r.elapsed.Seconds()
}

func (r *loadResult) pct(p int) float64 {
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	return float64(s[min(len(s)-1, len(s)*p/100)]) / float64(time.Millisecond)
}

// runLoad sends p's requests with clients workers to a fresh orders table
// and idemTable (a fresh one if empty), and checks the guarantee.
func runLoad(t *testing.T, variant string, p plan, clients int, idemTable string) *loadResult {
	t.Helper()
	w, drop := openWay(t, variant, idemTable)
	defer drop()
	return drive(t, []*way{w}, p, clients)[0]
}

// runPair sends p's requests to two ways at once, each on tables of its
// own: a client sends request i to one way and then the same request to
// the other (which goes first alternating with i), so that both meet the
// same engine, its garbage collections and the machine's other work at
// the same moments. It checks each way's guarantee.
func runPair(t *testing.T, a, b string, p plan, clients int) (*loadResult, *loadResult) {
	t.Helper()
	wa, dropA := openWay(t, a, "")
	defer dropA()
	wb, dropB := openWay(t, b, "")
	defer dropB()
	res := drive(t, []*way{wa, wb}, p, clients)
	return res[0], res[1]
}

// way is one handler of POST /orders on tables of its own, its DynamoDB
// attempts counted.
type way struct {
	variant string
	handle  func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	raw     *dynamodb.Client // for the test's own reads
	orders  string
	wire    *dynamotest.Wire
}

// openWay builds variant's handler on a fresh orders table and idemTable
// (a fresh one if empty); drop deletes the tables it made. A run's tables
// go when it ends, not with the test: an engine holding every earlier
// run's tables and items works harder for the later runs.
func openWay(t *testing.T, variant, idemTable string) (w *way, drop func()) {
	t.Helper()
	raw := dynamotest.Client(t, func(o *dynamodb.Options) { o.RetryMaxAttempts = 10 })
	var own []string
	drop = func() {
		for _, name := range own {
			_, _ = raw.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) // best effort: a table left behind costs a test engine only space
		}
	}
	if idemTable == "" {
		idemTable = dynamotest.Table(t, raw, "IdempotencyTable")
		own = append(own, idemTable)
	}
	orders := dynamotest.Table(t, raw, "OrdersTable")
	own = append(own, orders)
	wire := &dynamotest.Wire{}
	db := dynamotest.Client(t, func(o *dynamodb.Options) { o.RetryMaxAttempts, o.HTTPClient = 10, wire })
	store, err := idem.New(db, idemTable)
	if err != nil {
		drop()
		t.Fatal(err)
	}
	wire.Reset() // New's DescribeTable
	s := &server{store: store, db: db, table: orders, scopeClaim: "sub", fastPath: variant == "DoAtomic",
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now}
	w = &way{variant: variant, handle: s.routes().Handle, raw: raw, orders: orders, wire: wire}
	switch variant {
	case "plain":
		w.handle = s.plainCreate
	case "Do floor", "DoAtomic floor": // the same calls made bare (concurrency_bench_test.go), routed as the function routes
		w.handle = httpx.Routes{"POST /orders": s.floorCreate(idemTable, variant == "DoAtomic floor")}.Handle
	case driverAlone:
		w.handle = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			return events.APIGatewayV2HTTPResponse{StatusCode: 201}, nil
		}
	}
	return w, drop
}

// driverAlone is the way whose handler makes no call and writes nothing:
// what the driver itself costs, to be taken from the other ways' CPU.
const driverAlone = "driver alone"

// enginePID is the process of the engine the tests reach, or 0 where it is
// not a process of this machine (DynamoDB itself): its CPU is then not
// counted.
func enginePID(t *testing.T) int {
	t.Helper()
	u, err := url.Parse(os.Getenv("DYNAMODB_ENDPOINT"))
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("DYNAMODB_ENDPOINT %q: %v", u, err)
	}
	pid, err := proc.Listener(port)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// cpu is the CPU time pid has used, or 0 for pid 0 (an engine that is not
// a process of this machine).
func cpu(t *testing.T, pid int) time.Duration {
	t.Helper()
	if pid == 0 {
		return 0
	}
	d, err := proc.CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// drive sends p's requests with clients workers to every way, request i
// to each in turn (the first way of the turn moving on with i), and
// returns each way's result, its guarantee checked.
func drive(t *testing.T, ways []*way, p plan, clients int) []*loadResult {
	t.Helper()
	route := apitest.Function(t, "OrderFunction").Routes
	rt, params, _ := apigw.Match(route, "POST", "/orders") // once: the driver's own CPU competes with the handler's
	ev := func(key string) events.APIGatewayV2HTTPRequest {
		r := httptest.NewRequest("POST", "/orders", strings.NewReader(tea))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", key)
		return apigw.Event(r, []byte(tea), rt, params, map[string]string{"sub": "load"})
	}
	results := make([]*loadResult, len(ways))
	succeeded := make([][]bool, len(ways))
	for j := range ways {
		results[j] = &loadResult{ops: p.ops, latencies: make([]time.Duration, len(p.keys))}
		succeeded[j] = make([]bool, p.ops)
	}
	var mu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	var use *usage
	if len(ways) == 1 { // a pair's two ways share this process and the engine
		use = startUsage(t)
	}
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				op, _ := strconv.Atoi(p.keys[i][strings.LastIndexByte(p.keys[i], '-')+1:])
				for turn := range ways {
					j := (turn + i) % len(ways)
					e := ev(p.keys[i])
					t0 := time.Now()
					resp, err := ways[j].handle(context.Background(), e)
					results[j].latencies[i] = time.Since(t0)
					mu.Lock()
					switch {
					case err != nil || resp.StatusCode >= 500:
						results[j].errors++
					case resp.StatusCode == 201:
						succeeded[j][op] = true
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range p.keys {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	if use != nil { // the requests alone, not the checks below
		use.stop(t, results[0])
	}
	for j, w := range ways {
		res := results[j]
		res.elapsed = elapsed
		for _, ok := range succeeded[j] {
			if ok {
				res.succeededOps++
			}
		}
		res.orders = apitest.Items(t, w.raw, w.orders)
		res.answers, res.wire, res.connections = w.wire.Answers(), w.wire.OnTheWire(), w.wire.Connections()
		checkGuarantee(t, w.variant, res)
	}
	return results
}

// usage is what this process and the engine have used since it started:
// CPU, and this process's allocations.
type usage struct {
	engine         int
	client, engCPU time.Duration
	mem            runtime.MemStats
}

func startUsage(t *testing.T) *usage {
	t.Helper()
	u := &usage{engine: enginePID(t)}
	runtime.ReadMemStats(&u.mem)
	u.client, u.engCPU = proc.SelfCPU(), cpu(t, u.engine)
	return u
}

// stop puts into res what was used since startUsage.
func (u *usage) stop(t *testing.T, res *loadResult) {
	t.Helper()
	res.clientCPU, res.engineCPU = proc.SelfCPU()-u.client, cpu(t, u.engine)-u.engCPU
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	res.mallocs, res.allocated = mem.Mallocs-u.mem.Mallocs, mem.TotalAlloc-u.mem.TotalAlloc
}

// plainCreate is POST /orders without pkg/idem: the same order, written
// with one conditional PutItem. A retry makes a second order.
func (s *server) plainCreate(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	scope, body, refusal := httpapi.CheckRequest(&req, s.scopeClaim, maxBody)
	if refusal != nil {
		return httpx.Refused(refusal), nil
	}
	parsed, err := parseOrder(body)
	if errors.As(err, &refusal) {
		return httpx.Refused(refusal), nil
	}
	o := s.newOrder(scope, "ord_"+strconv.FormatUint(rand.Uint64(), 36), parsed)
	item, err := attributevalue.MarshalMap(&o)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(order_id)")}); err != nil {
		return httpapi.ErrorResponse(503, "internal_error", err.Error()), nil
	}
	return httpx.JSON(201, o), nil
}

// fill puts n completed records into the idempotency table with
// BatchWriteItem, 25 a call, from four clients at once.
