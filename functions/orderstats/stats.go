package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
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
func eventID(msg events.SQSMessage) (string, error) {
	var r record
	if err := json.Unmarshal([]byte(msg.Body), &r); err != nil || r.EventID == "" {
		return "", fmt.Errorf("%w: body is not a DynamoDB stream record with an eventID", idem.ErrInvalidKey)
	}
	return r.EventID, nil
}

type projector struct {
	table string // OrderStatsTable
}

// project counts each new order into its owner's stats. The counters are
// ADDed, which would count a duplicate twice: the update commits with the
// message's processed marker, once.
func (p *projector) project(ctx context.Context, msg events.SQSMessage, tx *idem.Tx) error {
	var r record
	if err := json.Unmarshal([]byte(msg.Body), &r); err != nil {
		return fmt.Errorf("decode stream record: %w", err)
	}
	if r.EventName != "INSERT" {
		return nil // only creations count
	}
	img := r.Change.NewImage
	scope, id := str(img["scope"]), str(img["order_id"])
	if scope == "" || id == "" {
		return fmt.Errorf("stream record %s has no scope or order_id", r.EventID)
	}
	items := 0
	if l := img["items"]; l.DataType() == events.DataTypeList {
		for _, it := range l.List() {
			if it.DataType() != events.DataTypeMap {
				continue
			}
			q, err := strconv.Atoi(it.Map()["quantity"].Number())
			if err != nil {
				return fmt.Errorf("stream record %s: item quantity: %w", r.EventID, err)
			}
			items += q
		}
	}
	tx.Add(types.TransactWriteItem{Update: &types.Update{
		TableName:        aws.String(p.table),
		Key:              map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: scope}},
		UpdateExpression: aws.String("ADD order_count :one, item_count :items SET last_order_id = :id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one":   &types.AttributeValueMemberN{Value: "1"},
			":items": &types.AttributeValueMemberN{Value: strconv.Itoa(items)},
			":id":    &types.AttributeValueMemberS{Value: id},
		},
	}}, nil)
	return nil
}

func str(v events.DynamoDBAttributeValue) string {
	if v.DataType() != events.DataTypeString {
		return ""
	}
	return v.String()
}
