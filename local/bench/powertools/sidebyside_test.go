// Package powertools runs pkg/idem and Powertools for AWS Lambda
// (TypeScript)'s idempotency utility side by side, on the same local engine,
// through the same counting proxy, in the same run: sequential first
// requests with and without a business write, replays, a 50-way race on one
// key, a holder that outlives its lease while a retry takes over, and the
// same key with another body.
//
// make bench installs the pinned Powertools (package.json and
// package-lock.json here) into bin/powertools and runs
// TestSideBySideWithPowertools with POWERTOOLS_BENCH=1; harness.cjs is the
// Powertools side. pkg/idem is used only through its public API.
package powertools_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/measure"
	"github.com/idemkeys/idem/local/template"
	"github.com/idemkeys/idem/pkg/idem"
)

// TestMain starts an engine only for the run that make bench asks for.
func TestMain(m *testing.M) {
	if os.Getenv("POWERTOOLS_BENCH") == "" {
		os.Exit(m.Run())
	}
	os.Exit(dynamotest.Main(m))
}

const (
	body      = `{"items":[{"sku":"tea","quantity":2},{"sku":"cake","quantity":1}],"note":"green, no sugar"}`
	otherBody = `{"items":[{"sku":"tea","quantity":3}],"note":"green, no sugar"}`
	raceWidth = 50
	lease     = time.Second
)

// counter is a reverse proxy in front of the engine that counts the
// DynamoDB calls by operation, whichever library sends them.
type counter struct {
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	calls map[string]int
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	c.mu.Lock()
	c.calls[op]++
	c.mu.Unlock()
	c.proxy.ServeHTTP(w, r)
}

// take returns the calls counted since the last take, and starts again.
func (c *counter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = map[string]int{}
	return out
}

// bench is one run: the engine behind the counter, a table of each kind for
// each library, and the Powertools harness.
type bench struct {
	t       *testing.T
	raw     *dynamodb.Client // straight to the engine, uncounted: for checks
	calls   *counter
	libs    []library
	js      *harness
	ordersJ string // the orders table Powertools writes to
}

// library is one side: a pkg/idem path, or Powertools.
type library interface {
	name() string
	// seq calls keys one after another; a repeated key is a replay.
	seq(keys []string, body string, write bool) (time.Duration, map[string]int, int)
	race(key string, n int) (map[string]int, int)
	// other sends key with body, then with otherBody.
	other(key string) []otherAnswer
	orders() string
}

func TestSideBySideWithPowertools(t *testing.T) {
	if os.Getenv("POWERTOOLS_BENCH") == "" {
		t.Skip("set POWERTOOLS_BENCH=1 after installing Powertools into bin/powertools (make bench does both)")
	}
	b := newBench(t)
	rounds, n := measure.EnvInt("POWERTOOLS_ROUNDS", 5), measure.EnvInt("POWERTOOLS_N", 100)
	b.warmUp()
	lat := b.latencies(rounds, n)
	races := b.races(rounds)
	slow := b.slowHolders(rounds)
	others := b.otherBodies()
	report := renderReport(b, measured{lat, races, slow, others}, rounds, n)
	t.Log("\n" + report)
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newBench(t *testing.T) *bench {
	t.Helper()
	raw := dynamotest.Client(t)
	target, err := url.Parse(os.Getenv(dynamo.EndpointEnv))
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{proxy: httputil.NewSingleHostReverseProxy(target), calls: map[string]int{}} //nolint:gosec // G704: a proxy to the test's own engine, at the endpoint the developer set
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	b := &bench{t: t, raw: raw, calls: c}
	client := dynamo.NewClient(srv.URL)
	records := dynamotest.Table(t, raw, "IdempotencyTable")
	for _, atomic := range []bool{false, true} {
		store, err := idem.New(client, records)
		if err != nil {
			t.Fatal(err)
		}
		b.libs = append(b.libs, &goLib{store: store, atomic: atomic, ordersTable: dynamotest.Table(t, raw, "OrdersTable"), raw: raw, client: client, records: records})
	}
	b.ordersJ = dynamotest.Table(t, raw, "OrdersTable")
	b.js = startHarness(t, srv.URL, powertoolsTable(t, raw), b.ordersJ)
	b.libs = append(b.libs, &jsLib{h: b.js, ordersTable: b.ordersJ})
	return b
}

// powertoolsTable creates a table as Powertools' documentation defines it:
// hash key "id", TTL on "expiration".
func powertoolsTable(t *testing.T, db *dynamodb.Client) string {
	t.Helper()
	name := "test-powertools-" + strings.ToLower(rand.Text()[:10])
	def := dynamo.Table{
		Attributes:   []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:    []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		TTLAttribute: "expiration",
	}
	if err := def.Create(context.Background(), db, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) // best effort: a table left behind costs a test engine only space
	})
	return name
}

// warmUp runs a few requests on each side before anything is measured (the
// JavaScript engine compiles as it goes; Go's first calls dial).
func (b *bench) warmUp() {
	for _, l := range b.libs {
		keys := make([]string, 20)
		for i := range keys {
			keys[i] = "warm-" + l.name() + "-" + strconv.Itoa(i%10)
		}
		l.seq(keys, body, true)
	}
	b.calls.take()
}

// count is how many orders a library's table holds under scope key.
func (b *bench) count(table, key string) int {
	b.t.Helper()
	out, err := b.raw.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("#s = :k"), ConsistentRead: aws.Bool(true),
		ExpressionAttributeNames: map[string]string{"#s": "scope"}, ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: key}},
		Select: types.SelectCount,
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return int(out.Count)
}

func tally(answers []string) map[string]int {
	t := map[string]int{}
	for _, a := range answers {
		t[strings.Fields(a)[0]]++
	}
	return t
}

func showTally(t map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(t)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, t[k]))
	}
	return strings.Join(parts, ", ")
}

func showCalls(calls map[string]int, per int) string {
	total := 0
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(calls)) {
		total += calls[op]
		parts = append(parts, fmt.Sprintf("%s %s", op, perOp(calls[op], per)))
	}
	return perOp(total, per) + " (" + strings.Join(parts, ", ") + ")"
}

func perOp(n, per int) string {
	if n%per == 0 {
		return strconv.Itoa(n / per)
	}
	return strconv.FormatFloat(float64(n)/float64(per), 'f', 2, 64)
}

func orderID(respBody []byte) string {
	var r struct{ ID string }
	_ = json.Unmarshal(respBody, &r) // a body that is not an order's names none: "", which the comparison of the sides shows
	return r.ID
}

func newOrderID() string { return "ord_" + strings.ToLower(rand.Text()[:16]) }

var errHarness = errors.New("the Powertools harness failed")

// harness is harness.cjs under node, one JSON command a line.
type harness struct {
	t   *testing.T
	in  *json.Encoder
	out *bufio.Scanner
	mu  sync.Mutex
}

func startHarness(t *testing.T, endpoint, table, orders string) *harness {
	t.Helper()
	root, err := template.ProjectDir()
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(root, "bin", "powertools", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@aws-lambda-powertools", "idempotency")); err != nil {
		t.Fatalf("Powertools is not installed in %s: make bench installs it (%v)", modules, err)
	}
	cmd := exec.Command("node", "harness.cjs")
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "DYNAMODB_ENDPOINT="+endpoint, "PT_TABLE="+table, "PT_ORDERS_TABLE="+orders,
		"AWS_LAMBDA_FUNCTION_NAME=bench", "POWERTOOLS_IDEMPOTENCY_DISABLED=false",
		"NODE_NO_WARNINGS=1") // the SDK's notice that its releases after January 2027 need Node.js 22
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() }) // the harness ends when its stdin closes; how it exits is not what the tests check
	out := bufio.NewScanner(stdout)
	out.Buffer(make([]byte, 1<<20), 1<<20)
	return &harness{t: t, in: json.NewEncoder(stdin), out: out}
}

// call sends one command and decodes its answer into reply.
func (h *harness) call(cmd map[string]any, reply any) {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.in.Encode(cmd); err != nil {
		h.t.Fatalf("%v: %v", errHarness, err)
	}
	if !h.out.Scan() {
		h.t.Fatalf("%v: no answer to %v (%v)", errHarness, cmd["op"], h.out.Err())
	}
	var failed struct{ Error string }
	if err := json.Unmarshal(h.out.Bytes(), &failed); err == nil && failed.Error != "" {
		h.t.Fatalf("%v: %s", errHarness, failed.Error)
	}
	if err := json.Unmarshal(h.out.Bytes(), reply); err != nil {
		h.t.Fatalf("%v: %v in %s", errHarness, err, h.out.Bytes())
	}
}

type jsLib struct {
	h           *harness
	ordersTable string
}

func (j *jsLib) name() string   { return "Powertools" }
func (j *jsLib) orders() string { return j.ordersTable }

func (j *jsLib) seq(keys []string, body string, write bool) (time.Duration, map[string]int, int) {
	var r struct {
		MS         float64
		Answers    map[string]int
		Executions int
	}
	j.h.call(map[string]any{"op": "seq", "keys": keys, "body": body, "write": write}, &r)
	return time.Duration(r.MS * float64(time.Millisecond)), r.Answers, r.Executions
}

func (j *jsLib) race(key string, n int) (map[string]int, int) {
	var r struct {
		Answers    map[string]int
		Executions int
	}
	j.h.call(map[string]any{"op": "race", "key": key, "body": body, "n": n}, &r)
	return r.Answers, r.Executions
}

func (j *jsLib) other(key string) []otherAnswer {
	var r struct{ First, Second, ValidatedFirst, ValidatedSecond string }
	j.h.call(map[string]any{"op": "otherBody", "key": key, "body": body, "other": otherBody}, &r)
	return []otherAnswer{
		{"Powertools (default: no payload validation)", r.First, r.Second},
		{"Powertools with payloadValidationJmesPath: body", r.ValidatedFirst, r.ValidatedSecond},
	}
}

// otherAnswer is what a library answered to a body and then, under the same
// key, to another body.
type otherAnswer struct{ who, first, second string }
