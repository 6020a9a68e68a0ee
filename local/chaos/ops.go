package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/idemkeys/idem/local/provider"
)

// kind is what a logical operation asks of the API.
type kind string

const (
	chargeCard     kind = "charge, card"
	chargeCustomer kind = "charge, saved customer"
	chargeDecline  kind = "charge, declined card"
	orderPost      kind = "order, POST"
	orderPut       kind = "order, PUT"
)

func (k kind) charge() bool { return strings.HasPrefix(string(k), "charge") }

// kinds are drawn with these weights.
var kinds = []struct {
	kind   kind
	weight int
}{{chargeCard, 30}, {chargeCustomer, 15}, {chargeDecline, 10}, {orderPost, 30}, {orderPut, 15}}

// operation is one logical operation: one request, sent under one key by
// one client, in one or more copies, each retried until it has an answer.
type operation struct {
	n      int
	kind   kind
	client int    // whose (scope: the client's subject)
	tag    string // unique to the operation: the charge's description, the order's note, the PUT's order id
	key    string
	method string
	path   string
	body   string
	faults []*fault
	// copies is how many copies of the request are sent at once (a
	// double click); late, when set, sends one more after that pause (a
	// retry that comes once the lease is over).
	copies int
	late   time.Duration
	ttl    bool   // sent once more after the record's TTL passed
	ttlHit func() // called when it is
	// impostor, when set, sends another request under the key while the
	// operation runs: it must never bind the key (DESIGN.md, "Failure").
	impostor    bool
	impostorHit func()
	others      []answer // the other request's answers

	began, took time.Duration
	sent        chan struct{} // closed at the first send
	once        sync.Once

	mu      sync.Mutex
	events  []event
	answers []answer
	final   []answer // the answers a round ended with: not retried
	hits    map[string]int
	// breaches are the answers openapi.yaml does not allow
	// (local/contract).
	breaches []string
}

// event is one line of an operation's history.
type event struct {
	at   time.Duration // since the campaign began
	what string
}

// answer is one HTTP answer a client got for the operation, or the error
// it got instead.
type answer struct {
	copy     int
	status   int
	code     string
	body     string
	replayed bool
	err      string
}

func (a answer) String() string {
	if a.err != "" {
		return fmt.Sprintf("copy %d: no answer (%s)", a.copy, a.err)
	}
	r := ""
	if a.replayed {
		r = " replayed"
	}
	return fmt.Sprintf("copy %d: %d%s %s %s", a.copy, a.status, r, a.code, a.body)
}

// transient says whether an answer was one to retry: it need not be the
// committed response.
func (a answer) transient() bool {
	return a.err != "" || a.status >= 500 || a.status == http.StatusTooManyRequests ||
		a.status == http.StatusConflict && a.code == "request_in_progress"
}

// scope is the JWT subject of client i, the scope of its operations.
func scope(i int) string { return fmt.Sprintf("chaos-client-%d", i) }

// customer is client i's saved customer at the provider, and its card.
func customer(i int) (id, card string) {
	return fmt.Sprintf("cus_chaos%d", i), fmt.Sprintf("pm_chaos%d_visa", i)
}

// newOperation draws operation n of a campaign from its own generator, so
// that the plan of operation n depends on the seed and n alone.
func newOperation(seed uint64, n, clients int, lease time.Duration) *operation {
	rng := rand.New(rand.NewPCG(seed, uint64(n))) //nolint:gosec // n is an operation's number, never negative
	op := &operation{n: n, client: rng.IntN(clients), copies: 1}
	op.kind = drawKind(rng)
	op.tag = fmt.Sprintf("chaos_%d_%d", seed, n)
	op.key = fmt.Sprintf("chaos-%d-%d-%08x", seed, n, rng.Uint32())
	op.method, op.path, op.body = request(op, rng)
	if rng.IntN(8) == 0 {
		op.copies = 2
	}
	plan(op, rng, lease)
	return op
}

func drawKind(rng *rand.Rand) kind {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	x := rng.IntN(total)
	for _, k := range kinds {
		if x -= k.weight; x < 0 {
			return k.kind
		}
	}
	return kinds[0].kind
}

func request(op *operation, rng *rand.Rand) (method, path, body string) {
	amount := 100 + 10*rng.IntN(500)
	var b map[string]any
	switch op.kind {
	case chargeCard:
		b = map[string]any{"amount": amount, "currency": "usd", "payment_method": provider.CardVisa, "description": op.tag}
	case chargeDecline:
		b = map[string]any{"amount": amount, "currency": "usd", "payment_method": provider.CardDeclined, "description": op.tag}
	case chargeCustomer:
		cus, _ := customer(op.client)
		b = map[string]any{"amount": amount, "currency": "eur", "customer": cus, "description": op.tag}
	case orderPost, orderPut:
		var items []map[string]any
		for i := range 1 + rng.IntN(3) {
			items = append(items, map[string]any{"sku": fmt.Sprintf("sku-%d", i+rng.IntN(20)), "quantity": 1 + rng.IntN(9)})
		}
		b = map[string]any{"items": items, "note": op.tag}
	}
	raw, _ := json.Marshal(b)
	switch op.kind {
	case orderPost:
		return http.MethodPost, "/orders", string(raw)
	case orderPut:
		return http.MethodPut, "/orders/" + op.tag, string(raw)
	}
	return http.MethodPost, "/charges", string(raw)
}

func (op *operation) event(at time.Duration, format string, args ...any) {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.events = append(op.events, event{at, fmt.Sprintf(format, args...)})
}

func (op *operation) answered(at time.Duration, a answer) {
	op.mu.Lock()
	op.answers = append(op.answers, a)
	op.mu.Unlock()
	op.event(at, "answer %s", a)
}

// done says whether a round of op ended with an answer not to retry.
func (op *operation) done() bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	return len(op.final) > 0
}

func (op *operation) ended(a answer) {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.final = append(op.final, a)
}
