package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// Consumer starts the order stats consumer's pool: its bootstrap under
// binDir, under the emulator, pointed at s as the API's functions are.
func Consumer(s *devstack.Stack, binDir string) (*rie.Pool, error) {
	tpl, err := template.Load(s.Root + "/template.yaml")
	if err != nil {
		return nil, err
	}
	fn, err := tpl.Function("OrderStatsFunction")
	if err != nil {
		return nil, err
	}
	env, err := devstack.RuntimeEnv(fn, s.Vars)
	if err != nil {
		return nil, err
	}
	emulator, err := rie.Binary(s.Root)
	if err != nil {
		return nil, err
	}
	return rie.NewPool(fn.LogicalID, emulator, fn.Bootstrap(binDir), rie.Options{Env: env, Timeout: time.Duration(fn.Timeout) * time.Second}, 2), nil
}

// The stats phase's faults, in the summary's table.
const (
	faultRedelivered = "message redelivered (same message id)"
	faultRedriven    = "message redriven (new message id)"
	faultKilled      = "consumer killed mid-batch"
	faultLostCommit  = "consumer's commit landed, its answer lost"
)

// delivery is one receive of a message by the consumer.
type delivery struct {
	msg   events.SQSMessage
	fault string // the fault this delivery is, if any
}

// feedStats sends every order's creation, as the pipe would put it on the
// queue, to the consumer in batches of ten, until each message has been
// processed: some delivered twice, some redriven under a new message id
// after the rest, some batches killed and some commits' answers lost. A
// failed message or batch goes back on the queue, as SQS redelivers it.
func (c *Campaign) feedStats(ctx context.Context) error {
	w, err := c.read(ctx)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(c.cfg.Seed, 1<<63))
	var queue, redriven []delivery
	n := 0
	for _, list := range w.orders {
		for _, o := range list {
			body, err := changeOf(o)
			if err != nil {
				return err
			}
			msg := events.SQSMessage{MessageId: "m-" + o.ID, Body: body}
			queue = append(queue, delivery{msg: msg})
			if rng.IntN(4) == 0 {
				queue = append(queue, delivery{msg: msg, fault: faultRedelivered})
			}
			if rng.IntN(8) == 0 {
				again := msg
				again.MessageId = "m-redriven-" + o.ID
				redriven = append(redriven, delivery{msg: again, fault: faultRedriven})
			}
			n++
		}
	}
	rng.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
	queue = append(queue, redriven...)
	c.progress("the stats consumer: %d orders' events, %d deliveries planned", n, len(queue))
	deadline := time.Now().Add(10 * time.Minute)
	for len(queue) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: the stats consumer did not process %d deliveries in 10 minutes", len(queue))
		}
		batch := queue[:min(10, len(queue))]
		queue = queue[len(batch):]
		queue = append(queue, c.deliver(ctx, rng, batch)...)
	}
	return nil
}

// deliver invokes the consumer with one batch, perhaps with a fault, and
// returns what must be delivered again.
func (c *Campaign) deliver(ctx context.Context, rng *rand.Rand, batch []delivery) []delivery {
	ev := events.SQSEvent{}
	for _, d := range batch {
		ev.Records = append(ev.Records, d.msg)
		if d.fault != "" {
			c.count(d.fault)
		}
	}
	first := eventIDOf(batch[0].msg)
	switch rng.IntN(20) {
	case 0:
		c.stack.Faults.Inject(faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.Latency, Delay: time.Second, Match: first, Reached: func() {
			c.count(faultKilled)
			c.stats.Crash()
		}})
	case 1:
		c.stack.Faults.Inject(faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.CommitThenDrop, Match: first, Reached: func() { c.count(faultLostCommit) }})
	}
	payload, _ := json.Marshal(ev)
	out, err := c.stats.Invoke(ctx, payload)
	c.stack.Faults.Clear() // a fault not reached is dropped with its batch
	if err != nil {
		c.statsEvent("batch of %d failed (%v): delivered again", len(batch), err)
		return again(batch, nil)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		c.statsEvent("batch of %d answered %s: delivered again", len(batch), out)
		return again(batch, nil)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	if len(failed) > 0 {
		c.statsEvent("batch of %d: %d failed, delivered again", len(batch), len(failed))
		return again(batch, failed)
	}
	return nil
}

// again is the batch's deliveries to make again: those failed, or all.
func again(batch []delivery, failed map[string]bool) []delivery {
	var out []delivery
	for _, d := range batch {
		if failed == nil || failed[d.msg.MessageId] {
			out = append(out, delivery{msg: d.msg})
		}
	}
	return out
}

func (c *Campaign) count(fault string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.injected[fault]++
}

func (c *Campaign) statsEvent(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statsRuns = append(c.statsRuns, fmt.Sprintf("%9.3fs ", c.since().Seconds())+fmt.Sprintf(format, args...))
}

// changeOf is the stream record of o's creation, as the pipe delivers it.
// Its eventID names the change, so a redrive under a new message id is
// the same change.
func changeOf(o orderItem) (string, error) {
	var items []events.DynamoDBAttributeValue
	for _, it := range o.Items {
		items = append(items, events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"sku": events.NewStringAttribute(it.SKU), "quantity": events.NewNumberAttribute(strconv.Itoa(it.Quantity)),
		}))
	}
	b, err := json.Marshal(events.DynamoDBEventRecord{EventID: "ev-" + o.ID, EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Unix(o.Created, 0)},
		NewImage: map[string]events.DynamoDBAttributeValue{
			"scope": events.NewStringAttribute(o.Scope), "order_id": events.NewStringAttribute(o.ID),
			"items": events.NewListAttribute(items), "created": events.NewNumberAttribute(strconv.FormatInt(o.Created, 10)),
		},
	}})
	return string(b), err
}

func eventIDOf(m events.SQSMessage) string {
	var r events.DynamoDBEventRecord
	_ = json.Unmarshal([]byte(m.Body), &r) // the campaign's own message; a body it did not make has no id
	return r.EventID
}
