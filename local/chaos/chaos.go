// Package chaos is a campaign of every fault at once through the whole
// local stack, and a checker over what the world holds afterwards.
//
// Logical operations (charges with cards, with saved customers and with
// declined cards; orders by POST and by PUT) go from many concurrent
// pkg/idemclient clients, each retried as a client does, to the local HTTP
// API (behind a fault proxy of its own), the functions' bootstraps under
// the Runtime Interface Emulator, the fault proxy in front of DynamoDB Local,
// and the provider simulator. Each operation draws from the seed up to
// three faults at once, limited to its own calls (faults.go); a kill -9
// kills every invocation running at that moment, so other operations meet
// it too. The orders' events are then fed to the stats consumer, redelivered
// and redriven, with kills and lost commits of their own (stats.go).
//
// The checker (check.go) reads the provider's ledger, the tables and every
// answer each client got: per operation at most one provider charge,
// exactly one once it ended, no charge without its record, every answer
// the committed response or one it was right to retry, no record in
// progress past its lease, each order counted once. From the idempotency
// table's stream (fence.go) it holds every commit to the lease the record
// named when the commit landed, which the world at the end cannot show
// when a fenced-out holder and its taker did the same thing. A violation prints the
// operation's whole history and the seed.
//
// The plan of each operation (its kind, body, faults, copies) depends on
// the seed and its number alone; the interleaving of concurrent clients
// does not, so a seed replays the same plan, not the same schedule.
package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/contract"
	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/pkg/idemclient"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// Config is a campaign's size and seed.
type Config struct {
	Seed    uint64
	Ops     int // logical operations
	Clients int // concurrent clients, each a scope of its own
	// Lease is the functions' IDEM_LEASE on the stack: the faults that
	// must outlast a lease are sized on it.
	Lease    time.Duration
	Progress io.Writer
}

// Campaign drives one run. Create it with New.
type Campaign struct {
	cfg       Config
	stack     *devstack.Stack
	stats     *rie.Pool
	db        *dynamodb.Client
	api       string            // the API, behind apiFaults
	apiFaults *faultproxy.Proxy // between the clients and the API
	base      *http.Transport   // the clients' connections
	tokens    []string          // per client
	search    string            // the provider's search, as set
	start     time.Time         // of the campaign: histories count from it
	inflight  chan struct{}     // operations begun and not ended
	sending   chan struct{}     // rounds of sending going on
	ops       []*operation      // in order
	stopAPI   func()            // the proxy's server
	stream    string            // the idempotency table's stream: every commit beside what it replaced
	mu        sync.Mutex        // guards what follows
	kills     []event           // every kill -9, for every history
	injected  map[string]int    // by fault name: how often it acted
	statsRuns []string          // the consumer's history
}

// New prepares a campaign on s, a stack started with a fault proxy and
// cfg.Lease as its lease; stats runs the order stats consumer (Consumer).
func New(s *devstack.Stack, stats *rie.Pool, cfg Config) (*Campaign, error) {
	if cfg.Ops <= 0 || cfg.Clients <= 0 || cfg.Lease <= 0 {
		return nil, fmt.Errorf("chaos: want operations, clients and a lease, got %+v", cfg)
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	c := &Campaign{cfg: cfg, stack: s, stats: stats, db: dynamo.NewClient(s.Endpoint), injected: map[string]int{},
		base:     &http.Transport{MaxIdleConnsPerHost: 64},
		inflight: make(chan struct{}, 16*cfg.Clients), sending: make(chan struct{}, cfg.Clients)}
	var err error
	if c.apiFaults, err = faultproxy.New(s.APIURL); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: c.apiFaults, ReadHeaderTimeout: 10 * time.Second}
	// Serve ends with ErrServerClosed when Close stops it; Close's error is
	// the listener's, and the campaign is over by then.
	go func() { _ = srv.Serve(l) }()
	c.api, c.stopAPI = "http://"+l.Addr().String(), func() { _ = srv.Close() }
	for i := range cfg.Clients {
		tok, err := s.Auth.Token(scope(i), 2*time.Hour)
		if err != nil {
			return nil, err
		}
		c.tokens = append(c.tokens, tok)
		cus, card := customer(i)
		s.Sim.AddCustomer(cus, map[string]string{"idem_scope": scope(i)}, card)
		s.Sim.AddPaymentMethod(card, cus, provider.CardVisa)
	}
	c.setSearch()
	return c, nil
}

// setSearch lags the provider's search by up to an hour, or switches it
// off, as the seed says: the charge must settle without it.
func (c *Campaign) setSearch() {
	rng := rand.New(rand.NewPCG(c.cfg.Seed, 1<<62))
	if rng.IntN(3) == 0 {
		c.stack.Sim.SetSearchAvailable(false)
		c.search = "provider search switched off"
		return
	}
	lag := time.Duration(rng.Int64N(int64(provider.SearchWorstLag)))
	c.stack.Sim.SetSearchLag(lag)
	c.search = fmt.Sprintf("provider search lagging %v", lag.Round(time.Second))
}

// Close stops what New started.
func (c *Campaign) Close() {
	c.stopAPI()
	c.base.CloseIdleConnections()
}

func (c *Campaign) since() time.Duration { return time.Since(c.start) }

func (c *Campaign) progress(format string, args ...any) {
	fmt.Fprintf(c.cfg.Progress, "• [%v] "+format+"\n", append([]any{c.since().Round(time.Second)}, args...)...)
}

// Run runs the campaign, heals the faults, settles what did not end, feeds
// the stats consumer, and checks the world.
func (c *Campaign) Run(ctx context.Context) (*Report, error) {
	c.start = time.Now()
	var err error
	if c.stream, err = c.streamRecords(ctx); err != nil {
		return nil, err
	}
	for n := range c.cfg.Ops {
		c.ops = append(c.ops, newOperation(c.cfg.Seed, n, c.cfg.Clients, c.cfg.Lease))
	}
	c.progress("%d operations from %d clients, seed %d, %s", c.cfg.Ops, c.cfg.Clients, c.cfg.Seed, c.search)
	var wg sync.WaitGroup
	for i, op := range c.ops {
		c.inflight <- struct{}{}
		wg.Go(func() {
			defer func() { <-c.inflight }()
			c.run(ctx, op)
		})
		if (i+1)%(max(100, c.cfg.Ops/10)) == 0 {
			c.progress("%d operations begun", i+1)
		}
	}
	wg.Wait()
	took := make([]time.Duration, len(c.ops))
	for i, op := range c.ops {
		took[i] = op.took
	}
	slices.Sort(took)
	c.progress("every operation ran (each took %v at the median, %v at the 90th percentile, %v at most); the faults heal",
		took[len(took)/2].Round(time.Millisecond), took[len(took)*9/10].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	c.stack.Sim.ClearFaults()
	c.stack.Faults.Clear()
	c.apiFaults.Clear()
	c.settle(ctx)
	c.stack.Faults.Landed()
	if err := c.feedStats(ctx); err != nil {
		return nil, err
	}
	c.progress("checking the world")
	return c.check(ctx)
}

// run arms op's faults and sends its copies, then, if planned, sends it
// once more after its record's TTL passed.
func (c *Campaign) run(ctx context.Context, op *operation) {
	op.began = c.since()
	defer func() { op.took = c.since() - op.began }()
	op.hits, op.sent = map[string]int{}, make(chan struct{})
	for _, f := range op.faults {
		f.kind.arm(c, op, f.p, c.hit(op, f.kind.name))
	}
	var wg sync.WaitGroup
	for cp := range op.copies {
		wg.Go(func() { c.send(ctx, op, cp) })
	}
	if op.late > 0 {
		wg.Go(func() {
			<-op.sent
			time.Sleep(op.late)
			c.send(ctx, op, op.copies)
		})
	}
	if op.impostor {
		wg.Go(func() { c.impose(ctx, op) })
	}
	wg.Wait()
	if op.ttl && op.done() {
		if err := c.expire(ctx, op); err != nil {
			op.event(c.since(), "could not expire the record: %v", err)
			return
		}
		op.ttlHit()
		c.send(ctx, op, op.copies+1)
	}
}

// impose sends another request under op's key, once op's record exists
// (so op's claim came first), eight times a quarter second apart: a
// client that reuses a key for a different request. Each must be refused
// (422) or told to retry; none may bind the key.
func (c *Campaign) impose(ctx context.Context, op *operation) {
	if !c.claimed(ctx, op) {
		return
	}
	op.impostorHit()
	body := otherBody(op)
	for range 8 {
		req, _ := http.NewRequestWithContext(ctx, op.method, c.api+op.path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.tokens[op.client])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(idemclient.HeaderKey, op.key)
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		resp, err := c.base.RoundTrip(req.WithContext(rctx))
		a := record(-1, resp, err)
		op.hold(req, body, resp, a)
		cancel()
		op.mu.Lock()
		op.others = append(op.others, a)
		op.mu.Unlock()
		op.event(c.since(), "the other request under the key: %s", a)
		time.Sleep(250 * time.Millisecond)
	}
}

// claimed waits until op's record is in the table.
func (c *Campaign) claimed(ctx context.Context, op *operation) bool {
	for ctx.Err() == nil {
		out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.stack.Tables["IdempotencyTable"]),
			Key: recordKey(op), ConsistentRead: aws.Bool(true)})
		if err == nil && len(out.Item) > 0 {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// recordKey is op's record's key: DESIGN.md's encoding of (scope, key).
func recordKey(op *operation) map[string]types.AttributeValue {
	sc := scope(op.client)
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("%d:%s:%s", len(sc), sc, op.key)}}
}

// otherBody is op's request with another amount, or another line item.
func otherBody(op *operation) string {
	var b map[string]any
	_ = json.Unmarshal([]byte(op.body), &b) // the campaign's own body, made by json.Marshal
	if a, ok := b["amount"].(float64); ok {
		b["amount"] = a + 10
	} else {
		b["items"] = append(b["items"].([]any), map[string]any{"sku": "other", "quantity": 1})
	}
	raw, _ := json.Marshal(b)
	return string(raw)
}

// hit is called each time one of op's faults acts.
func (c *Campaign) hit(op *operation, name string) func() {
	return func() {
		op.mu.Lock()
		op.hits[name]++
		op.mu.Unlock()
		op.event(c.since(), "fault: %s", name)
		c.mu.Lock()
		c.injected[name]++
		c.mu.Unlock()
	}
}

// killing is a fault's hit that also kills, with SIGKILL, every function
// invocation running now: op's, held at the fault, and any other's.
func (c *Campaign) killing(op *operation, hit func()) func() {
	return func() {
		hit()
		n := c.stack.API.Crash()
		c.mu.Lock()
		c.kills = append(c.kills, event{c.since(), fmt.Sprintf("kill -9 of %d function process(es), at operation %d's fault", n, op.n)})
		c.mu.Unlock()
	}
}

// rounds bounds how often a client sends an operation again after the
// client's own retries ended without an answer (a Retry-After too long, an
// unknown outcome): as a client that keeps the key does, later.
const rounds = 6

// send sends one copy of op until a round ends with an answer not to
// retry, at most rounds times.
func (c *Campaign) send(ctx context.Context, op *operation, cp int) bool {
	for round := range rounds {
		c.sending <- struct{}{}
		a, err := c.do(ctx, op, cp)
		<-c.sending
		if err == nil {
			op.ended(a)
			return true
		}
		wait := time.Second
		var unknown *idemclient.UnknownOutcomeError
		if errors.As(err, &unknown) {
			wait = max(wait, unknown.RetryAfter)
		}
		wait = min(wait, 70*time.Second)
		op.event(c.since(), "copy %d, round %d ended without an answer (%v); again in %v", cp, round+1, err, wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return false
		}
	}
	return false
}

// settle sends, with every fault healed, each operation that never got an
// answer, until it has one.
func (c *Campaign) settle(ctx context.Context) {
	var wg sync.WaitGroup
	n := 0
	for _, op := range c.ops {
		if op.done() {
			continue
		}
		n++
		wg.Go(func() { c.send(ctx, op, 100) })
	}
	if n > 0 {
		c.progress("%d operations without an answer: sent again, faults healed", n)
	}
	wg.Wait()
}

// do is one round: the request through a pkg/idemclient client, every
// attempt's answer recorded. It returns the answer that ended the round,
// or the client's error.
func (c *Campaign) do(ctx context.Context, op *operation, cp int) (answer, error) {
	var last answer
	client := idemclient.New(func(o *idemclient.Options) {
		o.Methods = []string{http.MethodPost, http.MethodPut}
		o.MaxAttempts, o.MaxRetryAfter, o.AttemptTimeout = 10, 5*time.Second, 15*time.Second
		o.Base = recorder(func(r *http.Request) (*http.Response, error) {
			op.event(c.since(), "copy %d sends %s %s", cp, r.Method, r.URL.Path)
			op.once.Do(func() { close(op.sent) })
			resp, err := c.base.RoundTrip(r)
			last = record(cp, resp, err)
			op.hold(r, op.body, resp, last)
			op.answered(c.since(), last)
			return resp, err
		})
	})
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, op.method, c.api+op.path, strings.NewReader(op.body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.tokens[op.client])
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idemclient.HeaderKey, op.key)
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	// The answer was read whole by record already (the body is its copy in
	// memory): draining and closing it can lose nothing.
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return last, nil
}

type recorder func(*http.Request) (*http.Response, error)

func (f recorder) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// hold holds an answer a to openapi.yaml (local/contract): one it does
// not allow is a breach of op's, reported with its history.
func (op *operation) hold(r *http.Request, body string, resp *http.Response, a answer) {
	if resp == nil || a.err != "" {
		return // no answer: nothing to hold
	}
	if err := contract.Check(contract.Exchange{Request: r, RequestBody: []byte(body), Response: resp, ResponseBody: []byte(a.body)}); err != nil {
		op.mu.Lock()
		op.breaches = append(op.breaches, err.Error())
		op.mu.Unlock()
	}
}

// record reads an attempt's answer whole, and puts its body back.
func record(cp int, resp *http.Response, err error) answer {
	if err != nil {
		return answer{copy: cp, err: err.Error()}
	}
	body, rerr := io.ReadAll(resp.Body)
	_ = resp.Body.Close() // what was read is kept, and a read error is recorded below
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	a := answer{copy: cp, status: resp.StatusCode, body: string(body), replayed: idemclient.Replayed(resp), code: idemclient.ProblemCode(resp)}
	if rerr != nil {
		a.err = "reading the body: " + rerr.Error()
	}
	return a
}

// expire makes op's record's TTL pass: expires_at a minute ago, as a
// record DynamoDB's TTL has not deleted yet.
func (c *Campaign) expire(ctx context.Context, op *operation) error {
	_, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(c.stack.Tables["IdempotencyTable"]),
		Key:                       recordKey(op),
		UpdateExpression:          aws.String("SET expires_at = :past"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":past": &types.AttributeValueMemberN{Value: fmt.Sprint(time.Now().Add(-time.Minute).Unix())}},
	})
	return err
}

// history is op's whole story, for a violation: the request, the faults
// drawn, every event (its own and every kill while it ran), every answer.
func (c *Campaign) history(op *operation, w *world) string {
	var b strings.Builder
	fmt.Fprintf(&b, "operation %d of seed %d: %s by %s, key %s, tag %s\n", op.n, c.cfg.Seed, op.kind, scope(op.client), op.key, op.tag)
	fmt.Fprintf(&b, "  request: %s %s %s\n", op.method, op.path, op.body)
	fmt.Fprintf(&b, "  copies: %d at once", op.copies)
	if op.late > 0 {
		fmt.Fprintf(&b, ", one more after %v", op.late)
	}
	if op.ttl {
		b.WriteString(", one more after the record's TTL passed")
	}
	b.WriteString("\n  faults drawn:")
	if len(op.faults) == 0 {
		b.WriteString(" none")
	}
	for _, f := range op.faults {
		fmt.Fprintf(&b, " [%s (p=%d), acted %d time(s)]", f.kind.name, f.p, op.hits[f.kind.name])
	}
	b.WriteString("\n")
	evs := append([]event(nil), op.events...)
	if len(evs) > 0 {
		from, to := evs[0].at, evs[len(evs)-1].at
		c.mu.Lock()
		for _, k := range c.kills {
			if k.at >= from && k.at <= to {
				evs = append(evs, k)
			}
		}
		c.mu.Unlock()
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	for _, e := range evs {
		fmt.Fprintf(&b, "  %9.3fs %s\n", e.at.Seconds(), e.what)
	}
	b.WriteString(w.about(op))
	return b.String()
}
