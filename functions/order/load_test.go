package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"os"
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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/functions/internal/app"
	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
)

// TestLoad drives POST /orders on the local engine three ways, with the same
// requests: plain (the same create, no pkg/idem), claim-then-commit (Do) and
// one transaction (DoAtomic); then checks that each idempotent way made one
// order per logical operation. make test runs it small; make bench runs it
// at LOAD_REQUESTS=10000 with LOAD_SWEEP=1 and writes BENCH_OUT.
func TestLoad(t *testing.T) {
	n := envInt("LOAD_REQUESTS", 300)
	clients := envInt("LOAD_CLIENTS", 32)
	rounds := envInt("LOAD_ROUNDS", 3)
	var report strings.Builder
	fmt.Fprintf(&report, "POST /orders, %d requests in %d interleaved rounds, %d concurrent clients, 20%% duplicates (a repeat of one of the last 64 keys, often in flight)\n\n", n, rounds, clients)
	fmt.Fprintln(&report, "| handler | requests/s | p50 ms | p99 ms | throughput vs plain (min–max over rounds) | orders | logical operations |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|---|")
	variants := []string{"plain", "Do", "DoAtomic"}
	all := map[string]*loadResult{}
	for _, v := range variants {
		all[v] = &loadResult{}
	}
	ratios := map[string][]float64{}
	for r := range rounds {
		p := newPlan(n/rounds, 0.2, uint64(r))
		base := 0.0
		for _, v := range variants {
			res := runLoad(t, v, p, clients, 0)
			all[v].merge(res)
			if v == "plain" {
				base = res.throughput()
			} else {
				ratios[v] = append(ratios[v], res.throughput()/base)
			}
			if v != "plain" && res.orders != res.succeededOps {
				t.Fatalf("%s: %d orders for %d logical operations that succeeded", v, res.orders, res.succeededOps)
			}
			if res.errors > 0 {
				t.Fatalf("%s: %d requests failed outright", v, res.errors)
			}
		}
	}
	for _, v := range variants {
		res := all[v]
		spread := "1"
		if rs := ratios[v]; len(rs) > 0 {
			spread = fmt.Sprintf("%.2f (%.2f–%.2f)", median(rs), slices.Min(rs), slices.Max(rs))
		}
		fmt.Fprintf(&report, "| %s | %.0f | %.1f | %.1f | %s | %d | %d |\n", v, res.throughput(), res.pct(50), res.pct(99), spread, res.orders, res.ops)
	}
	if os.Getenv("LOAD_SWEEP") != "" {
		fmt.Fprintf(&report, "\nDo, 300 requests, by concurrent clients:\n\n| clients | requests/s | p50 ms | p99 ms |\n|---|---|---|---|\n")
		for _, c := range []int{1, 8, 32, 128} {
			res := runLoad(t, "Do", newPlan(300, 0.2, 9), c, 0)
			fmt.Fprintf(&report, "| %d | %.0f | %.1f | %.1f |\n", c, res.throughput(), res.pct(50), res.pct(99))
		}
		// Not 10k or 100k: moto copies every table a transaction touches,
		// so past a thousand records its copy is all that is measured.
		fmt.Fprintf(&report, "\nDo, 300 requests, 32 clients, by records already in the idempotency table:\n\n| records | requests/s | p50 ms | p99 ms |\n|---|---|---|---|\n")
		for _, size := range []int{0, 1000} {
			res := runLoad(t, "Do", newPlan(300, 0.2, 10), 32, size)
			fmt.Fprintf(&report, "| %d | %.0f | %.1f | %.1f |\n", size, res.throughput(), res.pct(50), res.pct(99))
		}
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// plan is the sequence of requests: the key of each, and how many logical
// operations (distinct keys) it holds.
type plan struct {
	keys []string
	ops  int
}

func newPlan(n int, dup float64, seed uint64) plan {
	rng := rand.New(rand.NewPCG(seed, 42))
	var p plan
	for range n {
		if p.ops > 0 && rng.Float64() < dup {
			back := min(p.ops, 64)
			p.keys = append(p.keys, "op-"+strconv.Itoa(p.ops-1-rng.IntN(back)))
			continue
		}
		p.keys = append(p.keys, "op-"+strconv.Itoa(p.ops))
		p.ops++
	}
	return p
}

type loadResult struct {
	latencies    []time.Duration
	elapsed      time.Duration
	errors       int
	orders, ops  int
	succeededOps int
}

func (r *loadResult) merge(o *loadResult) {
	r.latencies = append(r.latencies, o.latencies...)
	r.elapsed += o.elapsed
	r.errors += o.errors
	r.orders += o.orders
	r.ops += o.ops
	r.succeededOps += o.succeededOps
}

func (r *loadResult) throughput() float64 {
	return float64(len(r.latencies)) / r.elapsed.Seconds()
}

func (r *loadResult) pct(p int) float64 {
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	return float64(s[min(len(s)-1, len(s)*p/100)]) / float64(time.Millisecond)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// runLoad sends p's requests with clients workers to a fresh stack of
// tables holding preload completed records.
func runLoad(t *testing.T, variant string, p plan, clients, preload int) *loadResult {
	t.Helper()
	raw := dynamotest.Client(t, func(o *dynamodb.Options) { o.RetryMaxAttempts = 10 })
	idemTable := dynamotest.Table(t, raw, "IdempotencyTable")
	orders := dynamotest.Table(t, raw, "OrdersTable")
	fill(t, raw, idemTable, preload)
	store, err := idem.New(raw, idemTable)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{store: store, db: raw, table: orders, scopeClaim: "sub", fastPath: variant == "DoAtomic",
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now}
	handle := s.routes().Handle
	if variant == "plain" {
		handle = s.plainCreate
	}
	return drive(t, handle, raw, orders, p, clients)
}

// drive sends p's requests to handle with clients workers.
func drive(t *testing.T, handle func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), raw *dynamodb.Client, orders string, p plan, clients int) *loadResult {
	t.Helper()
	route := apitest.Function(t, "OrderFunction").Routes
	ev := func(key string) events.APIGatewayV2HTTPRequest {
		r := httptest.NewRequest("POST", "/orders", strings.NewReader(tea))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", key)
		rt, params, _ := apigw.Match(route, "POST", "/orders")
		return apigw.Event(r, []byte(tea), rt, params, map[string]string{"sub": "load"})
	}
	res := &loadResult{ops: p.ops, latencies: make([]time.Duration, len(p.keys))}
	succeeded := make([]bool, p.ops)
	var mu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				e := ev(p.keys[i])
				t0 := time.Now()
				resp, err := handle(context.Background(), e)
				res.latencies[i] = time.Since(t0)
				mu.Lock()
				switch {
				case err != nil || resp.StatusCode >= 500:
					res.errors++
				case resp.StatusCode == 201:
					op, _ := strconv.Atoi(strings.TrimPrefix(p.keys[i], "op-"))
					succeeded[op] = true
				}
				mu.Unlock()
			}
		}()
	}
	for i := range p.keys {
		next <- i
	}
	close(next)
	wg.Wait()
	res.elapsed = time.Since(start)
	for _, ok := range succeeded {
		if ok {
			res.succeededOps++
		}
	}
	res.orders = apitest.Items(t, raw, orders)
	return res
}

// plainCreate is POST /orders without pkg/idem: the same order, written
// with one conditional PutItem. A retry makes a second order.
func (s *server) plainCreate(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	scope, body, refusal := httpapi.CheckRequest(&req, s.scopeClaim, maxBody)
	if refusal != nil {
		return refusal.Response(), nil
	}
	parsed, refusal := parseOrder(body)
	if refusal != nil {
		return refusal.Response(), nil
	}
	o := s.newOrder(scope, "ord_"+strconv.FormatUint(rand.Uint64(), 36), parsed)
	item, err := attributevalue.MarshalMap(&o)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(order_id)")}); err != nil {
		return httpapi.ErrorResponse(503, "internal_error", err.Error()), nil
	}
	return app.JSON(201, o), nil
}

// fill puts n completed records into the idempotency table, 25 a call.
func fill(t *testing.T, db *dynamodb.Client, table string, n int) {
	t.Helper()
	exp := strconv.FormatInt(time.Now().Add(24*time.Hour).Unix(), 10)
	for i := 0; i < n; i += 25 {
		var reqs []types.WriteRequest
		for j := i; j < min(i+25, n); j++ {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
				idem.AttrPK:   &types.AttributeValueMemberS{Value: "4:fill:k" + strconv.Itoa(j)},
				"status":      &types.AttributeValueMemberS{Value: idem.StatusCompleted},
				"fingerprint": &types.AttributeValueMemberS{Value: "v1:x"},
				"expires_at":  &types.AttributeValueMemberN{Value: exp},
				"response":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"status": &types.AttributeValueMemberN{Value: "201"}, "body": &types.AttributeValueMemberB{Value: []byte(`{"id":"ord_x"}`)}}},
			}}})
		}
		for len(reqs) > 0 {
			out, err := db.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
			if err != nil {
				t.Fatal(err)
			}
			reqs = out.UnprocessedItems[table]
		}
	}
}
