package idem_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// TestFloor puts each outcome of Do and DoAtomic, and of each Lambda HTTP
// door, beside its floor: the same DynamoDB calls made bare with aws-sdk-go-v2,
// the same items, on the same engine and client, no library. The floor's
// inputs are the library's own, recorded from one request of the case and
// sent again with the key, the lease token and the order id replaced (a
// transaction gets a fresh ClientRequestToken), so the two sides make the
// same calls with items of the same size. The requests alternate, library
// and floor, one each, in rounds; the ratio is the library's time over the
// floor's in the same round.
//
// It asserts that both sides made the same calls, never the time. make test
// runs it small; make bench runs FLOOR_REQUESTS=100 FLOOR_ROUNDS=7, writes
// BENCH_OUT (the table the charts are drawn from) and BENCH_RAW (each
// round's mean per side as a benchmark sample, which benchstat compares).
func TestFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("the floor measurement: go test -run TestFloor")
	}
	n := envInt("FLOOR_REQUESTS", 10)
	rounds := envInt("FLOOR_ROUNDS", 2)
	f := newFixture(t)
	cases := floorCases(t, f)
	type result struct {
		lib, bare []float64 // ms per request, mean of each round
		ratios    []float64 // mean over mean, per round
		libAll    []float64 // every request's ms
		bareAll   []float64
		calls     map[string]int
	}
	results := make([]*result, len(cases))
	for i := range results {
		results[i] = &result{}
	}
	// raw holds each round's mean per side in Go's benchmark format, one
	// sample per round, for benchstat (make bench): BENCH_RAW.
	var raw strings.Builder
	benchName := strings.NewReplacer(" ", "_", "/", "-", "=", "-").Replace
	for round := range rounds {
		for ci, c := range cases {
			res := results[ci]
			c.lib.db.Reset()
			c.bare.db.Reset()
			var lib, bare time.Duration
			for i := range n {
				sides := []*floorSide{c.lib, c.bare}
				if (i+round)%2 == 1 {
					sides[0], sides[1] = sides[1], sides[0]
				}
				for _, s := range sides {
					start := time.Now()
					if err := s.run(round, i); err != nil {
						t.Fatalf("%s, %s: %v", c.name, s.name, err)
					}
					d := time.Since(start)
					ms := float64(d) / float64(time.Millisecond)
					if s == c.lib {
						lib += d
						res.libAll = append(res.libAll, ms)
					} else {
						bare += d
						res.bareAll = append(res.bareAll, ms)
					}
				}
			}
			lc, bc := c.lib.db.Calls(), c.bare.db.Calls()
			if !maps.Equal(lc, bc) {
				t.Fatalf("%s: the library made %v, the floor %v: not the same calls", c.name, lc, bc)
			}
			if want := c.calls * n; c.lib.db.Total() != want {
				t.Fatalf("%s: %d calls %v, want %d", c.name, c.lib.db.Total(), lc, want)
			}
			res.calls = lc
			res.lib = append(res.lib, float64(lib)/float64(time.Millisecond)/float64(n))
			res.bare = append(res.bare, float64(bare)/float64(time.Millisecond)/float64(n))
			res.ratios = append(res.ratios, float64(lib)/float64(bare))
			fmt.Fprintf(&raw, "BenchmarkFloor/case=%s/side=floor %d %d ns/op\n", benchName(c.name), n, bare.Nanoseconds()/int64(n))
			fmt.Fprintf(&raw, "BenchmarkFloor/case=%s/side=library %d %d ns/op\n", benchName(c.name), n, lib.Nanoseconds()/int64(n))
		}
	}
	var report strings.Builder
	fmt.Fprintf(&report, "Engine: DynamoDB Local %s. Each case: %d requests per round and side, %d rounds, the library and the floor alternating request by request (who goes first alternating too); the floor is the library's own DynamoDB inputs sent bare with aws-sdk-go-v2 on the same client:\n\n", dynamoLocalVersion, n, rounds)
	fmt.Fprintln(&report, "| case | DynamoDB calls per request (both sides, asserted) | library ms per request | floor ms per request | library over floor, mean per round: median (min–max over rounds) | median request, library over floor |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|")
	for ci, c := range cases {
		res := results[ci]
		fmt.Fprintf(&report, "| %s | %s | %.2f | %.2f | %s | %.2f |\n", c.name, callsText(res.calls, n),
			median(res.lib), median(res.bare), spread(res.ratios), median(res.libAll)/median(res.bareAll))
	}
	atomicReplay(t, f, &report, floorRuns{n, rounds}, func(name string) float64 {
		for ci, c := range cases {
			if c.name == name {
				return median(results[ci].lib)
			}
		}
		t.Fatalf("no case %q", name)
		return 0
	})
	t.Log("\n" + report.String())
	for env, text := range map[string]string{"BENCH_OUT": report.String(), "BENCH_RAW": raw.String()} {
		if out := os.Getenv(env); out != "" {
			if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// dynamoLocalVersion is the engine's version as local/ensure-dynamodb-local.sh
// pins it; every table names it.
const dynamoLocalVersion = "3.3.1"

func callsText(calls map[string]int, n int) string {
	ops := slices.Sorted(maps.Keys(calls))
	total, parts := 0, make([]string, 0, len(ops))
	for _, op := range ops {
		total += calls[op]
		parts = append(parts, fmt.Sprintf("%s %g", op, float64(calls[op])/float64(n)))
	}
	return fmt.Sprintf("%g (%s)", float64(total)/float64(n), strings.Join(parts, ", "))
}

// floorSide is one side of a case: run makes request i of a round, and db
// counts its calls.
type floorSide struct {
	name string
	db   *testbed.Counter
	run  func(round, i int) error
}

type floorCase struct {
	name      string
	calls     int // per request, on either side
	lib, bare *floorSide
}

// floorRecorder keeps a copy of every input the library sends, for the floor.
type floorRecorder struct {
	idem.DynamoDBAPI
	puts []*dynamodb.PutItemInput
	txs  []*dynamodb.TransactWriteItemsInput
	seq  []string
}

func (r *floorRecorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.puts, r.seq = append(r.puts, in), append(r.seq, "PutItem")
	return r.DynamoDBAPI.PutItem(ctx, in, o...)
}

func (r *floorRecorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	r.txs, r.seq = append(r.txs, in), append(r.seq, "TransactWriteItems")
	return r.DynamoDBAPI.TransactWriteItems(ctx, in, o...)
}

// floorKey is the key of request i of a round on a side: the same length
// on every side, so the items are the same size.
func floorKey(side string, c, round, i int) string {
	return fmt.Sprintf("%s-%02d-%02d-%05d", side, c, round, i)
}

func pkOf(scope, key string) string { return strconv.Itoa(len(scope)) + ":" + scope + ":" + key }

// renamed is what a first request's floor replaces in the recorded inputs
// of tmpl's request, to make request k's: the record's key, the idempotency
// key, the order id, and a fresh lease token for tok.
func renamed(scope, tmpl, k, tok string) map[string]string {
	return map[string]string{pkOf(scope, tmpl): pkOf(scope, k), tmpl: k, "o-" + tmpl: "o-" + k, tok: rand.Text()}
}

// record is the idempotency record's item in the first recorded call (nil
// if there was none).
func (r *floorRecorder) record() map[string]types.AttributeValue {
	if len(r.seq) == 0 {
		return nil
	}
	if r.seq[0] == "PutItem" {
		return r.puts[0].Item
	}
	return r.txs[0].TransactItems[0].Put.Item
}

// replay sends the recorded inputs again, bare, each string value equal to
// a key of with replaced by its value; a condition that fails is an answer
// (the floor of a replay is that failure), any other error is not.
func (r *floorRecorder) replay(db idem.DynamoDBAPI, with map[string]string) error {
	ctx := context.Background()
	p, x := 0, 0
	for _, op := range r.seq {
		var err error
		switch op {
		case "PutItem":
			in := *r.puts[p]
			p++
			in.Item, in.ExpressionAttributeValues = substMap(in.Item, with), substMap(in.ExpressionAttributeValues, with)
			_, err = db.PutItem(ctx, &in)
		case "TransactWriteItems":
			src := r.txs[x]
			x++
			in := dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(rand.Text()), TransactItems: make([]types.TransactWriteItem, len(src.TransactItems))}
			for i, it := range src.TransactItems {
				put := *it.Put
				put.Item, put.ExpressionAttributeValues = substMap(put.Item, with), substMap(put.ExpressionAttributeValues, with)
				in.TransactItems[i].Put = &put
			}
			_, err = db.TransactWriteItems(ctx, &in)
		}
		var ccf *types.ConditionalCheckFailedException
		var tce *types.TransactionCanceledException
		if err != nil && !errors.As(err, &ccf) && !errors.As(err, &tce) {
			return err
		}
	}
	return nil
}

func substMap(m map[string]types.AttributeValue, with map[string]string) map[string]types.AttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = subst(v, with)
	}
	return out
}

func subst(v types.AttributeValue, with map[string]string) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		if s, ok := with[v.Value]; ok {
			return &types.AttributeValueMemberS{Value: s}
		}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: substMap(v.Value, with)}
	}
	return v
}

// floorCases builds every case: its library side, and its floor from one
// recorded request of the library's.
func floorCases(t *testing.T, f *fixture) []floorCase {
	ctx := context.Background()
	var cases []floorCase
	newStore := func(db idem.DynamoDBAPI, optFns ...func(*idem.Options)) *idem.Store {
		s, err := idem.New(db, f.Table, optFns...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	order := func(key string) idem.Work {
		return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			id := "o-" + key
			tx.Add(f.OrderPut("alice", id, "first"), nil)
			return idem.Response{StatusCode: 201, Header: map[string]string{"Content-Type": "application/json", "Location": "/orders/" + id}, Body: []byte(`{"order_id":"` + id + `"}`)}, nil
		}
	}
	plain := func(key string) idem.Work {
		return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			return idem.Response{StatusCode: 201, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"ok":true}`)}, nil
		}
	}
	body := `{"sku":"tea"}`
	other := `{"sku":"coffee"}`
	type path struct {
		name string
		do   func(s *idem.Store) func(context.Context, idem.Request, idem.Work) (idem.Result, error)
	}
	paths := []path{
		{"Do", func(s *idem.Store) func(context.Context, idem.Request, idem.Work) (idem.Result, error) { return s.Do }},
		{"DoAtomic", func(s *idem.Store) func(context.Context, idem.Request, idem.Work) (idem.Result, error) {
			return s.DoAtomic
		}},
	}
	// check holds each library answer to what the case is.
	type want struct {
		replayed bool
		err      error
	}
	// spec is a case on a path: its name, the DynamoDB calls per request,
	// the work, the request's body, its fixed key (empty: a new key per
	// request) and the answer it wants.
	type spec struct {
		name    string
		calls   int
		work    func(key string) idem.Work
		reqBody string
		fixed   string
		w       want
	}
	add := func(p path, c spec) {
		name, calls, work, reqBody, fixed, w := c.name, c.calls, c.work, c.reqBody, c.fixed, c.w
		libDB, bareDB := &testbed.Counter{API: f.Raw}, &testbed.Counter{API: f.Raw}
		lib := newStore(libDB)
		rec := &floorRecorder{DynamoDBAPI: f.Raw}
		ci := len(cases)
		tmpl := floorKey("tmpl", ci, 0, 0)
		if fixed != "" {
			tmpl = fixed
		}
		tr := req("alice", tmpl, reqBody)
		if _, err := p.do(newStore(rec))(ctx, tr, work(tmpl)); !errors.Is(err, w.err) {
			t.Fatalf("%s %s, recorded: %v, want %v", p.name, name, err, w.err)
		}
		tok := testbed.Str(rec.record(), "lease_token")
		key := func(side string, round, i int) string {
			if fixed != "" {
				return fixed
			}
			return floorKey(side, ci, round, i)
		}
		cases = append(cases, floorCase{name: p.name + ": " + name, calls: calls,
			lib: &floorSide{name: "library", db: libDB, run: func(round, i int) error {
				k := key("lib_", round, i)
				res, err := p.do(lib)(ctx, req("alice", k, reqBody), work(k))
				if !errors.Is(err, w.err) || res.Replayed != w.replayed {
					return fmt.Errorf("got %+v, %v; want replayed %v, error %v", res, err, w.replayed, w.err)
				}
				return nil
			}},
			bare: &floorSide{name: "floor", db: bareDB, run: func(round, i int) error {
				if fixed != "" {
					return rec.replay(bareDB, nil)
				}
				k := key("bare", round, i)
				return rec.replay(bareDB, renamed("alice", tmpl, k, tok))
			}},
		})
	}
	done := func(key, b string) string { // a completed key, for replays and 422s
		if _, err := f.Store.Do(ctx, req("alice", key, b), order(key)); err != nil {
			t.Fatal(err)
		}
		return key
	}
	held := req("alice", "held-key-00000", body)
	// Held for the whole test: a lease that lapsed mid-run would be taken
	// over (by DoAtomic's 409 case, which then commits).
	t.Cleanup(holdKey(t, f.NewStore(func(o *idem.Options) { o.Lease = 12 * time.Hour }), held))
	for _, p := range paths {
		first := 2
		if p.name == "DoAtomic" {
			first = 1
		}
		add(p, spec{"first request, no business write", first, plain, body, "", want{}})
		add(p, spec{"first request, one business write", first, order, body, "", want{}})
		add(p, spec{"replay", 1, order, body, done("done-"+p.name, body), want{replayed: true}})
		add(p, spec{"409 in progress", 1, order, body, held.Key, want{err: idem.ErrInProgress}})
		add(p, spec{"422 other request", 1, order, other, done("mism-"+p.name, body), want{err: idem.ErrFingerprintMismatch}})
	}
	doorCases(t, f, &cases)
	return cases
}

// doorOrder is the door cases' body, and doorCreated their response's.
type doorOrder struct {
	SKU string `json:"sku"`
}

type doorCreated struct {
	ID  string `json:"order_id"`
	SKU string `json:"sku"`
}

const doorBody = `{"sku":"tea"}`

func doorHeader(key string) map[string]string {
	return map[string]string{"idempotency-key": key, "content-type": "application/json"}
}

// floorDoor is one of idemlambda's HTTP doors over its event E and its
// response R: how to build it, its events, the scope they carry, and how
// a handler without the library would answer.
type floorDoor[E, R any] struct {
	name    string // in the case's name: "REST API"
	id      string // in its replay's key
	scope   string // what the door reads from its events' verified identity
	wrap    func(idemlambda.Doer, idemlambda.Parse[doorOrder], idemlambda.Handler[E, doorOrder], ...func(*idemlambda.Options[E])) func(context.Context, E) (R, error)
	opt     func(*idemlambda.Options[E]) // the door's own options, if any
	event   func(sub string, header map[string]string, body string) E
	body    func(E) string
	answer  func(R) (status int, header map[string]string)
	respond func(status int, header map[string]string, body string) R // the floor's answer
}

// doorCases are each Lambda HTTP door's first request (one business write)
// and replay, on Do and DoAtomic, a door a line. Each door's events
// (testbed's) carry its own verified identity of alice: a JWT claim (HTTP
// API), a Cognito user pool claim (REST API), an IAM user's signature
// (function URL, whose scope is the user's ARN), an ALB authenticate
// rule's identity header (ALB, which has no scope of its own).
func doorCases(t *testing.T, f *fixture, cases *[]floorCase) {
	addDoor(t, f, cases, floorDoor[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse]{name: "HTTP API", id: "http", scope: "alice",
		wrap: idemlambda.HTTPAPI[doorOrder], event: testbed.APIRequest, body: httpAPIBody, answer: httpAPIAnswer, respond: httpAPIRespond})
	addDoor(t, f, cases, floorDoor[events.APIGatewayProxyRequest, events.APIGatewayProxyResponse]{name: "REST API", id: "rest", scope: "alice",
		wrap: idemlambda.RESTAPI[doorOrder], event: testbed.RESTRequest, body: restAPIBody, answer: restAPIAnswer, respond: restAPIRespond})
	addDoor(t, f, cases, floorDoor[events.LambdaFunctionURLRequest, events.LambdaFunctionURLResponse]{name: "Function URL", id: "url", scope: testbed.IAMUserARN("alice"),
		wrap: idemlambda.FunctionURL[doorOrder], event: testbed.FunctionURLRequest, body: functionURLBody, answer: functionURLAnswer, respond: functionURLRespond})
	addDoor(t, f, cases, floorDoor[events.ALBTargetGroupRequest, events.ALBTargetGroupResponse]{name: "ALB", id: "alb", scope: "alice",
		opt:  func(o *idemlambda.Options[events.ALBTargetGroupRequest]) { o.Scope = idemlambda.ALBOIDCIdentity },
		wrap: idemlambda.ALB[doorOrder], event: testbed.ALBRequest, body: albBody, answer: albAnswer, respond: albRespond})
}

// Each door's event body, its answer (status and headers), and a handler's
// answer without the library.
func httpAPIBody(e events.APIGatewayV2HTTPRequest) string      { return e.Body }
func restAPIBody(e events.APIGatewayProxyRequest) string       { return e.Body }
func functionURLBody(e events.LambdaFunctionURLRequest) string { return e.Body }
func albBody(e events.ALBTargetGroupRequest) string            { return e.Body }

func httpAPIAnswer(r events.APIGatewayV2HTTPResponse) (int, map[string]string) {
	return r.StatusCode, r.Headers
}
func restAPIAnswer(r events.APIGatewayProxyResponse) (int, map[string]string) {
	return r.StatusCode, r.Headers
}
func functionURLAnswer(r events.LambdaFunctionURLResponse) (int, map[string]string) {
	return r.StatusCode, r.Headers
}
func albAnswer(r events.ALBTargetGroupResponse) (int, map[string]string) {
	return r.StatusCode, r.Headers
}

func httpAPIRespond(s int, h map[string]string, b string) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{StatusCode: s, Headers: h, Body: b}
}
func restAPIRespond(s int, h map[string]string, b string) events.APIGatewayProxyResponse {
	return events.APIGatewayProxyResponse{StatusCode: s, Headers: h, Body: b}
}
func functionURLRespond(s int, h map[string]string, b string) events.LambdaFunctionURLResponse {
	return events.LambdaFunctionURLResponse{StatusCode: s, Headers: h, Body: b}
}
func albRespond(s int, h map[string]string, b string) events.ALBTargetGroupResponse {
	return events.ALBTargetGroupResponse{StatusCode: s, StatusDescription: strconv.Itoa(s) + " " + http.StatusText(s), Headers: h, Body: b}
}

// addDoor adds d's four cases: its first request and its replay, on Do and
// on DoAtomic.
func addDoor[E, R any](t *testing.T, f *fixture, cases *[]floorCase, d floorDoor[E, R]) {
	handler := func(ctx context.Context, r idemlambda.Request[E, doorOrder], tx *idem.Tx) (idem.Response, error) {
		id := "o-" + r.Key
		tx.Add(f.OrderPut(r.Scope, id, "first"), nil)
		b, err := json.Marshal(doorCreated{ID: id, SKU: r.Body.SKU})
		return idem.Response{StatusCode: 201, Header: map[string]string{"Content-Type": "application/json", "Location": "/orders/" + id}, Body: b}, err
	}
	parse := func(b []byte) (doorOrder, error) {
		var o doorOrder
		err := json.Unmarshal(b, &o)
		return o, err
	}
	for _, path := range []string{"Do", "DoAtomic"} {
		atomic := path == "DoAtomic"
		door := func(db idem.DynamoDBAPI) func(context.Context, E) (R, error) {
			s, err := idem.New(db, f.Table)
			if err != nil {
				t.Fatal(err)
			}
			return d.wrap(s, parse, handler, func(o *idemlambda.Options[E]) {
				if d.opt != nil {
					d.opt(o)
				}
				o.Atomic = atomic
			})
		}
		for _, replay := range []bool{false, true} {
			*cases = append(*cases, doorCase(t, f, d, door, doorAt{path, replay, len(*cases)}))
		}
	}
}

// doorAt places a door case: its path (Do or DoAtomic), whether it is the
// replay rather than the first request, and the case's index.
type doorAt struct {
	path   string
	replay bool
	ci     int
}

// doorCase is one case of d (at.path, its first request or its replay, the
// case's index at.ci): the library through the door, and the floor, which
// decodes the body and encodes the response with encoding/json, as a
// handler without the library would, around the door's recorded calls.
func doorCase[E, R any](t *testing.T, f *fixture, d floorDoor[E, R], door func(idem.DynamoDBAPI) func(context.Context, E) (R, error), at doorAt) floorCase {
	path, replay, ci := at.path, at.replay, at.ci
	name, tmpl := d.name+" door ("+path+"): first request, one business write", floorKey("tmpl", ci, 0, 0)
	if replay {
		name, tmpl = d.name+" door ("+path+"): replay", "door-replay-"+d.id+"-"+path
		if st, h := d.serve(door(f.Raw), tmpl); st != 201 || h[idemlambda.HeaderReplayed] != "" {
			t.Fatalf("%s, its first request: %d %v", name, st, h)
		}
	}
	// ok holds an answer to the case: 201, marked replayed on a replay.
	ok := func(st int, h map[string]string) bool {
		return st == 201 && (h[idemlambda.HeaderReplayed] != "") == replay
	}
	rec := &floorRecorder{DynamoDBAPI: f.Raw}
	if st, h := d.serve(door(rec), tmpl); !ok(st, h) {
		t.Fatalf("%s, recorded: %d %v", name, st, h)
	}
	item := rec.record()
	if pk := testbed.Str(item, idem.AttrPK); pk != pkOf(d.scope, tmpl) {
		t.Fatalf("%s: the record is %q, want %q: the floor would not write what the library does", name, pk, pkOf(d.scope, tmpl))
	}
	tok := testbed.Str(item, "lease_token")
	key := func(side string, round, i int) string {
		if replay {
			return tmpl
		}
		return floorKey(side, ci, round, i)
	}
	libDB, bareDB := &testbed.Counter{API: f.Raw}, &testbed.Counter{API: f.Raw}
	lib := door(libDB)
	return floorCase{name: name, calls: len(rec.seq),
		lib: &floorSide{name: "library", db: libDB, run: func(round, i int) error {
			if st, h := d.serve(lib, key("lib_", round, i)); !ok(st, h) {
				return fmt.Errorf("door answered %d %v", st, h)
			}
			return nil
		}},
		bare: &floorSide{name: "floor", db: bareDB, run: func(round, i int) error {
			k := key("bare", round, i)
			with := map[string]string(nil)
			if !replay {
				with = renamed(d.scope, tmpl, k, tok)
			}
			return doorFloor(d, k, func() error { return rec.replay(bareDB, with) })
		}},
	}
}

// doorFloor is d's request k without the library: decode the event's
// body, make the calls, encode the response.
func doorFloor[E, R any](d floorDoor[E, R], k string, calls func() error) error {
	var o doorOrder
	if err := json.Unmarshal([]byte(d.body(d.event("alice", doorHeader(k), doorBody))), &o); err != nil {
		return err
	}
	if err := calls(); err != nil {
		return err
	}
	b, err := json.Marshal(doorCreated{ID: "o-" + k, SKU: o.SKU})
	if err != nil {
		return err
	}
	if st, h := d.answer(d.respond(201, map[string]string{"Content-Type": "application/json", "Location": "/orders/o-" + k}, string(b))); st != 201 {
		return fmt.Errorf("floor answered %d %v", st, h)
	}
	return nil
}

// serve sends door the event of key and reads its answer (status 0 and
// the error if it failed).
func (d floorDoor[E, R]) serve(door func(context.Context, E) (R, error), key string) (int, map[string]string) {
	r, err := door(context.Background(), d.event("alice", doorHeader(key), doorBody))
	if err != nil {
		return 0, map[string]string{"error": err.Error()}
	}
	return d.answer(r)
}

// floorRuns is the floor's measure: n requests per round and side, over
// rounds rounds.
type floorRuns struct {
	n, rounds int
}

// atomicReplay prices DoAtomic's replay beside Do's, from the cases' own
// library times, adds a replay from Options.Cache (measured here, asserted
// to make no call), and says for how many replays per first request each
// path is the cheaper one, in time on this engine and in write units by
// DynamoDB's rules (TestCostPerRequest's: Do 5 + 1 per replay, DoAtomic 4 +
// 4 per replay).
func atomicReplay(t *testing.T, f *fixture, report *strings.Builder, runs floorRuns, lib func(name string) float64) {
	n, rounds := runs.n, runs.rounds
	ctx := context.Background()
	db := &testbed.Counter{API: f.Raw}
	s, err := idem.New(db, f.Table, withCache(1000, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	r := req("alice", "atomic-cached", `{"sku":"tea"}`)
	work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(f.OrderPut("alice", "o-atomic-cached-"+rand.Text()[:8], "first"), nil)
		return idem.Response{StatusCode: 201, Body: []byte(`{"order_id":"o"}`)}, nil
	}
	for range 2 { // the first request, then a replay that fills the cache
		if _, err := s.DoAtomic(ctx, r, work); err != nil {
			t.Fatal(err)
		}
	}
	db.Reset()
	var cached []float64
	for range rounds {
		start := time.Now()
		for range n {
			if res, err := s.DoAtomic(ctx, r, work); err != nil || !res.Replayed {
				t.Fatalf("cached replay = %+v, %v", res, err)
			}
		}
		cached = append(cached, float64(time.Since(start))/float64(time.Millisecond)/float64(n))
	}
	if db.Total() != 0 {
		t.Fatalf("DoAtomic's replays from the cache made %v, want no call", db.Calls())
	}
	doFirst, atFirst := lib("Do: first request, one business write"), lib("DoAtomic: first request, one business write")
	doReplay, atReplay := lib("Do: replay"), lib("DoAtomic: replay")
	fmt.Fprintf(report, "\nDoAtomic's replay beside Do's (engine: DynamoDB Local %s; library ms per request, medians over the rounds above; write units by DynamoDB's rules, from TestCostPerRequest):\n\n", dynamoLocalVersion)
	fmt.Fprintln(report, "| path | first request (one business write), ms | replay, ms | replay's calls | first request WCU | replay WCU |")
	fmt.Fprintln(report, "|---|---|---|---|---|---|")
	fmt.Fprintf(report, "| Do | %.2f | %.2f | 1 PutItem (fails its condition) | 5 | 1 |\n", doFirst, doReplay)
	fmt.Fprintf(report, "| DoAtomic | %.2f | %.2f | 1 TransactWriteItems (cancelled), and the work again | 4 | 4 |\n", atFirst, atReplay)
	fmt.Fprintf(report, "| DoAtomic, replay from Options.Cache (same execution environment) | | %.4f | none (asserted) | | 0 |\n", median(cached))
	breakEven := "never (DoAtomic's replay is not dearer here)"
	if atReplay > doReplay {
		breakEven = fmt.Sprintf("%.2f", (doFirst-atFirst)/(atReplay-doReplay))
	}
	fmt.Fprintf(report, "\nDoAtomic costs less per logical operation than Do while replays per first request stay under %s in time on this engine, and under 0.33 in write units (5 + r against 4 + 4r).\n", breakEven)
}
