package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/functions/internal/tracing"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// attrScope is OrderStatsTable's hash key in template.yaml.
const attrScope = "scope"

// consumer is the projection's name: the scope of its processed markers.
const consumer = "order-stats"

// record is what each message carries: a change of OrdersTable, as its
// stream delivers it through the pipe to the queue.
type record = events.DynamoDBEventRecord

// eventID keys a message by the stream record's eventID, which names the
// change itself: a pipe that retries a send makes a new SQS message (a new
// messageId) of the same change.
func eventID(msg *events.SQSMessage) (string, error) {
	var r record
	if err := json.Unmarshal([]byte(msg.Body), &r); err != nil || r.EventID == "" {
		return "", fmt.Errorf("%w: body is not a DynamoDB stream record with an eventID", idem.ErrInvalidKey)
	}
	return r.EventID, nil
}

// MarkerTTL is how long a processed marker is kept: idem.MaxTTL. SQS
// cannot be made to give up a message as soon: the dead-letter queue keeps
// one 14 days from its first enqueue, and a redrive makes it a new message
// with a new retention. So a change older than MaxAge is refused instead,
// said so in the log and acknowledged, never counted: its marker may be
// gone, and counting it could count it twice.
const (
	MarkerTTL = idem.MaxTTL
	MaxAge    = MarkerTTL - 24*time.Hour // a day's margin for clocks and TTL
)

type projector struct {
	db    statsReader
	table string // OrderStatsTable
	now   func() time.Time
	log   *slog.Logger
}

// statsReader is the read the projection makes of OrderStatsTable.
type statsReader interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// project counts each new order into its owner's stats. The counters are
// ADDed, which would count a duplicate twice: the update commits with the
// message's processed marker, once. last_order_id is the newest order by
// its creation time (then by id), whatever order the messages come in: an
// older order redelivered or redriven leaves it alone.
func (p *projector) project(ctx context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error {
	msg := ev.Event
	var r record
	if err := json.Unmarshal([]byte(msg.Body), &r); err != nil {
		return fmt.Errorf("decode stream record: %w", err)
	}
	if r.EventName != "INSERT" {
		return nil // only creations count
	}
	// The message's span (the Store's), linked to the request's that
	// created the order: a trace from the order to its count.
	tracing.Link(ctx, str(r.Change.NewImage[tracing.ItemAttribute]))
	if at := r.Change.ApproximateCreationDateTime.Time; at.Unix() > 0 && p.now().Sub(at) > MaxAge {
		p.log.Error("orderstats: change refused, older than the exactly-once window; reconcile by hand",
			"event_id", r.EventID, "age_hours", int(p.now().Sub(at).Hours()), "max_age_hours", int(MaxAge.Hours()))
		return nil // marked processed, counted nowhere
	}
	img := r.Change.NewImage
	scope, id := str(img["scope"]), str(img["order_id"])
	if scope == "" || id == "" {
		return fmt.Errorf("stream record %s has no scope or order_id", r.EventID)
	}
	items, err := quantities(img["items"])
	if err != nil {
		return fmt.Errorf("stream record %s: %w", r.EventID, err)
	}
	created := r.Change.ApproximateCreationDateTime.Unix() // an order written before it kept its own
	if img["created"].DataType() == events.DataTypeNumber {
		if created, err = strconv.ParseInt(img["created"].Number(), 10, 64); err != nil {
			return fmt.Errorf("stream record %s: created is not a unix time", r.EventID)
		}
	}
	up, err := p.update(ctx, scope, latest{created, id}, items)
	if err != nil {
		return err
	}
	tx.Add(types.TransactWriteItem{Update: up}, nil)
	return nil
}

// latest is the newest order a scope's stats have seen.
type latest struct {
	created int64 // unix seconds, the order's own creation time
	id      string
}

func (a latest) newerThan(b latest) bool {
	return a.created > b.created || a.created == b.created && a.id > b.id
}

// update counts the order and, when it is newer than the newest the stats
// hold, makes it last_order_id. It is conditioned on the newest it read,
// so that a concurrent projection's fails the write and its message is
// retried, rather than an older order winning.
func (p *projector) update(ctx context.Context, scope string, o latest, items int) (*types.Update, error) {
	key := map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: scope}}
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(p.table), Key: key, ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("last_order_id, last_order_created")})
	if err != nil {
		return nil, fmt.Errorf("read the stats of the scope: %w", err)
	}
	values := map[string]types.AttributeValue{
		":one":   &types.AttributeValueMemberN{Value: "1"},
		":items": &types.AttributeValueMemberN{Value: strconv.Itoa(items)},
	}
	up := &types.Update{TableName: aws.String(p.table), Key: key, UpdateExpression: aws.String("ADD order_count :one, item_count :items"),
		ConditionExpression: aws.String("attribute_not_exists(last_order_created)"), ExpressionAttributeValues: values}
	var seen latest
	if c, ok := out.Item["last_order_created"].(*types.AttributeValueMemberN); ok {
		if seen.created, err = strconv.ParseInt(c.Value, 10, 64); err != nil {
			return nil, fmt.Errorf("the stats of the scope: last_order_created is not a unix time")
		}
		if id, ok := out.Item["last_order_id"].(*types.AttributeValueMemberS); ok {
			seen.id = id.Value
		}
		up.ConditionExpression = aws.String("last_order_created = :seen_created AND last_order_id = :seen_id")
		values[":seen_created"], values[":seen_id"] = out.Item["last_order_created"], &types.AttributeValueMemberS{Value: seen.id}
	}
	if _, known := out.Item["last_order_created"]; !known || o.newerThan(seen) {
		*up.UpdateExpression += " SET last_order_id = :id, last_order_created = :created"
		values[":id"], values[":created"] = &types.AttributeValueMemberS{Value: o.id}, &types.AttributeValueMemberN{Value: strconv.FormatInt(o.created, 10)}
	}
	return up, nil
}

// quantities adds up the line items' quantities. A value of another type
// than the one expected is an error for this message alone: the accessors
// of aws-lambda-go panic on a wrong type, which would fail the whole batch.
func quantities(l events.DynamoDBAttributeValue) (int, error) {
	if l.DataType() != events.DataTypeList {
		return 0, errors.New("items is not a list")
	}
	total := 0
	for i, it := range l.List() {
		if it.DataType() != events.DataTypeMap {
			return 0, fmt.Errorf("items[%d] is not a map", i)
		}
		q := it.Map()["quantity"]
		if q.DataType() != events.DataTypeNumber {
			return 0, fmt.Errorf("items[%d].quantity is not a number", i)
		}
		n, err := strconv.Atoi(q.Number())
		if err != nil || n < 0 {
			return 0, fmt.Errorf("items[%d].quantity is not a count", i)
		}
		total += n
	}
	return total, nil
}

func str(v events.DynamoDBAttributeValue) string {
	if v.DataType() != events.DataTypeString {
		return ""
	}
	return v.String()
}
