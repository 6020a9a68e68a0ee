package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/provider"
)

// world is what the campaign left behind: the provider's ledger and the
// tables, read after every operation and message ended.
type world struct {
	effects  map[string][]provider.Effect // by description: the operation's tag
	charges  map[string]chargeItem        // by charge id
	records  map[string]recordItem        // by scope and key
	orders   map[string][]orderItem       // by note: the operation's tag
	stats    map[string]statsItem         // by scope
	inFlight []recordItem                 // records in progress past their lease
	commits  map[string][]commit          // by record pk: every write that completed it
}

type chargeItem struct {
	Scope  string `dynamodbav:"scope"`
	ID     string `dynamodbav:"charge_id"`
	Status string `dynamodbav:"status"`
}

type recordItem struct {
	PK         string `dynamodbav:"pk"`
	LeaseToken string `dynamodbav:"lease_token"`
	Scope      string `dynamodbav:"scope"`
	Key        string `dynamodbav:"key"`
	Status     string `dynamodbav:"status"`
	LeaseUntil int64  `dynamodbav:"lease_until"`
	ExpiresAt  int64  `dynamodbav:"expires_at"`
	Response   *struct {
		Status int    `dynamodbav:"status"`
		Body   []byte `dynamodbav:"body"`
	} `dynamodbav:"response"`
}

type orderItem struct {
	Scope   string `dynamodbav:"scope" json:"-"`
	ID      string `dynamodbav:"order_id" json:"id"`
	Note    string `dynamodbav:"note" json:"note"`
	Created int64  `dynamodbav:"created" json:"created"`
	Items   []struct {
		SKU      string `dynamodbav:"sku" json:"sku"`
		Quantity int    `dynamodbav:"quantity" json:"quantity"`
	} `dynamodbav:"items" json:"items"`
}

type statsItem struct {
	Scope  string `dynamodbav:"scope"`
	Orders int    `dynamodbav:"order_count"`
	Items  int    `dynamodbav:"item_count"`
}

func recordID(scope, key string) string { return scope + "\x00" + key }

// read scans every table of the stack, consistently, and takes the
// provider's ledger.
func (c *Campaign) read(ctx context.Context) (*world, error) {
	w := &world{effects: map[string][]provider.Effect{}, charges: map[string]chargeItem{}, records: map[string]recordItem{},
		orders: map[string][]orderItem{}, stats: map[string]statsItem{}}
	for _, e := range c.stack.Sim.Effects() {
		w.effects[e.Description] = append(w.effects[e.Description], e)
	}
	now := time.Now().UnixMilli()
	err := c.scanAll(ctx, map[string]func(map[string]types.AttributeValue) error{
		"ChargesTable": func(it map[string]types.AttributeValue) error {
			var ch chargeItem
			err := attributevalue.UnmarshalMap(it, &ch)
			w.charges[ch.ID] = ch
			return err
		},
		"IdempotencyTable": func(it map[string]types.AttributeValue) error {
			var r recordItem
			err := attributevalue.UnmarshalMap(it, &r)
			w.records[recordID(r.Scope, r.Key)] = r
			if r.Status == "IN_PROGRESS" && r.LeaseUntil < now {
				w.inFlight = append(w.inFlight, r)
			}
			return err
		},
		"OrdersTable": func(it map[string]types.AttributeValue) error {
			var o orderItem
			err := attributevalue.UnmarshalMap(it, &o)
			w.orders[o.Note] = append(w.orders[o.Note], o)
			return err
		},
		"OrderStatsTable": func(it map[string]types.AttributeValue) error {
			var s statsItem
			err := attributevalue.UnmarshalMap(it, &s)
			w.stats[s.Scope] = s
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	// The stream after the tables: every commit a table shows is then in it.
	w.commits, err = c.readCommits(ctx)
	return w, err
}

func (c *Campaign) scanAll(ctx context.Context, tables map[string]func(map[string]types.AttributeValue) error) error {
	for id, each := range tables {
		p := dynamodb.NewScanPaginator(c.db, &dynamodb.ScanInput{TableName: aws.String(c.stack.Tables[id]), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("scan %s: %w", id, err)
			}
			for _, it := range out.Items {
				if err := each(it); err != nil {
					return fmt.Errorf("%s: %w", id, err)
				}
			}
		}
	}
	return nil
}

// What a violation is, for the summary's last line.
const (
	doubleEffect = "double effect"
	orphan       = "orphan"
	mismatch     = "mismatched replay"
	unfenced     = "commit without the lease"
	other        = "other"
)

// violation is one broken guarantee.
type violation struct {
	class, what string
}

// checkOp holds op to its guarantees against the world.
func checkOp(op *operation, w *world) []violation {
	var v []violation
	add := func(class, format string, args ...any) { v = append(v, violation{class, fmt.Sprintf(format, args...)}) }
	if len(op.final) == 0 {
		add(other, "the operation never got an answer not to retry")
	}
	for _, b := range op.breaches {
		add(other, "%s", b)
	}
	if op.kind != orderPut {
		v = append(v, checkAnswers(op, w)...)
	}
	v = append(v, checkFence(op, w)...)
	for _, a := range op.others {
		if !a.transient() && (a.status != http.StatusUnprocessableEntity || a.code != "idempotency_key_reused") {
			add(other, "another request under the key got %s, want 422 idempotency_key_reused or an answer to retry", a)
		}
	}
	switch {
	case op.kind.charge():
		v = append(v, checkCharge(op, w)...)
	case op.kind == orderPost:
		v = append(v, checkOrder(op, w, http.StatusCreated)...)
	default:
		v = append(v, checkPut(op, w)...)
	}
	return v
}

// checkAnswers holds every answer a client got under op's key to the
// committed response: byte for byte, or one it was right to retry.
func checkAnswers(op *operation, w *world) []violation {
	var v []violation
	r, ok := w.records[recordID(scope(op.client), op.key)]
	if !ok || r.Status != "COMPLETED" || r.Response == nil {
		if len(op.final) > 0 {
			v = append(v, violation{other, fmt.Sprintf("the operation ended, but its record is %+v (found: %v)", r, ok)})
		}
		return v
	}
	for _, a := range op.answers {
		if a.transient() {
			continue
		}
		if a.status != r.Response.Status || a.body != string(r.Response.Body) {
			v = append(v, violation{mismatch, fmt.Sprintf("answer %s is not the committed %d %s", a, r.Response.Status, r.Response.Body)})
		}
	}
	return v
}

// wantStatus is the final answer each kind of operation must end with.
var wantStatus = map[kind]int{chargeCard: http.StatusCreated, chargeCustomer: http.StatusCreated, chargeDecline: http.StatusPaymentRequired, orderPost: http.StatusCreated}

func checkCharge(op *operation, w *world) []violation {
	var v []violation
	add := func(class, format string, args ...any) { v = append(v, violation{class, fmt.Sprintf(format, args...)}) }
	effects := w.effects[op.tag]
	if len(effects) > 1 {
		add(doubleEffect, "%d provider charges for one operation: %+v", len(effects), effects)
	}
	for _, e := range effects {
		if _, ok := w.charges[e.PaymentIntentID]; !ok && len(op.final) > 0 {
			add(orphan, "provider charge %s (%s) has no charge record", e.PaymentIntentID, e.Status)
		}
	}
	wantEffect := "succeeded"
	if op.kind == chargeDecline {
		wantEffect = "requires_payment_method"
	}
	for _, a := range op.final {
		switch {
		case a.status != wantStatus[op.kind]:
			add(other, "the operation ended with %s, want %d", a, wantStatus[op.kind])
		case len(effects) == 0:
			add(orphan, "the operation ended with %d, and the provider made no charge", a.status)
		case effects[0].Status != wantEffect:
			add(other, "the provider's charge is %s, want %s", effects[0].Status, wantEffect)
		case !strings.Contains(a.body, `"`+effects[0].PaymentIntentID+`"`):
			add(mismatch, "the answer %s does not name the provider's charge %s", a, effects[0].PaymentIntentID)
		}
	}
	return v
}

func checkOrder(op *operation, w *world, want int) []violation {
	var v []violation
	add := func(class, format string, args ...any) { v = append(v, violation{class, fmt.Sprintf(format, args...)}) }
	orders := w.orders[op.tag]
	if len(orders) > 1 {
		add(doubleEffect, "%d orders for one operation: %+v", len(orders), orders)
	}
	for _, a := range op.final {
		switch {
		case a.status != want:
			add(other, "the operation ended with %s, want %d", a, want)
		case len(orders) == 0:
			add(orphan, "the operation ended with %d, and no order exists", a.status)
		case !strings.Contains(a.body, `"id":"`+orders[0].ID+`"`):
			add(mismatch, "the answer %s does not name the order %s", a, orders[0].ID)
		}
	}
	return v
}

// checkPut holds a PUT to natural idempotency: one order under its id, and
// every answer that is not to retry (201 first, 200 after) that order.
func checkPut(op *operation, w *world) []violation {
	var v []violation
	add := func(class, format string, args ...any) { v = append(v, violation{class, fmt.Sprintf(format, args...)}) }
	orders := w.orders[op.tag]
	if len(orders) > 1 {
		add(doubleEffect, "%d orders for one PUT: %+v", len(orders), orders)
	}
	if len(orders) == 0 {
		if len(op.final) > 0 {
			add(orphan, "the PUT ended, and no order %s exists", op.tag)
		}
		return v
	}
	stored, _ := json.Marshal(orders[0])
	for _, a := range op.answers {
		if a.transient() {
			continue
		}
		var got orderItem
		_ = json.Unmarshal([]byte(a.body), &got) // a body that is not an order compares unequal below
		again, _ := json.Marshal(got)
		if a.status != http.StatusCreated && a.status != http.StatusOK || string(again) != string(stored) {
			add(mismatch, "answer %s is not the stored order %s", a, stored)
		}
	}
	return v
}

// about is what the world holds of op, for its history.
func (w *world) about(op *operation) string {
	var b strings.Builder
	for _, e := range w.effects[op.tag] {
		_, rec := w.charges[e.PaymentIntentID]
		fmt.Fprintf(&b, "  provider: %s %s under key %s (charge record: %v)\n", e.PaymentIntentID, e.Status, e.IdempotencyKey, rec)
	}
	for _, o := range w.orders[op.tag] {
		fmt.Fprintf(&b, "  order: %s created %d\n", o.ID, o.Created)
	}
	if r, ok := w.records[recordID(scope(op.client), op.key)]; ok {
		fmt.Fprintf(&b, "  record: %s, lease until %d, expires %d", r.Status, r.LeaseUntil, r.ExpiresAt)
		if r.Response != nil {
			fmt.Fprintf(&b, ", response %d %s", r.Response.Status, r.Response.Body)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// checkStats holds the consumer to counting each order once: per scope, the
// orders and their items that OrdersTable holds.
func checkStats(w *world) []string {
	want := map[string]statsItem{}
	for _, list := range w.orders {
		for _, o := range list {
			s := want[o.Scope]
			s.Orders++
			for _, it := range o.Items {
				s.Items += it.Quantity
			}
			want[o.Scope] = s
		}
	}
	var bad []string
	for sc, s := range want {
		if got := w.stats[sc]; got.Orders != s.Orders || got.Items != s.Items {
			bad = append(bad, fmt.Sprintf("stats of %s count %d orders and %d items; the orders table holds %d and %d", sc, got.Orders, got.Items, s.Orders, s.Items))
		}
	}
	sort.Strings(bad)
	return bad
}
