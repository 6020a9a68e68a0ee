package idemlambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// An HTTP API Lambda: the body parsed once into a typed value, the scope
// from the JWT that API Gateway verified, the same answer on a retry.
func ExampleHTTPAPI() {
	// In a Lambda: idem.New(dynamodb.NewFromConfig(cfg), os.Getenv("IDEMPOTENCY_TABLE")).
	store, _, err := idemtest.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	type greeting struct {
		Name string `json:"name"`
	}
	parse := func(body []byte) (greeting, error) {
		var g greeting
		if err := json.Unmarshal(body, &g); err != nil || g.Name == "" {
			return g, &idemlambda.Refusal{StatusCode: 400, Code: "invalid_request", Message: "name is required"}
		}
		return g, nil
	}
	handler := idemlambda.HTTPAPI(store, parse, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, greeting], tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 201, Body: []byte("hello " + req.Body.Name + " from " + req.Scope)}, nil
	}) // lambda.Start(handler)

	req := events.APIGatewayV2HTTPRequest{RouteKey: "POST /greetings", Headers: map[string]string{"idempotency-key": "g-1"}, Body: `{"name":"Ada"}`}
	req.RequestContext.HTTP.Method = "POST"
	req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "user-42"}},
	}
	for range 2 { // the client retries with the same key
		resp, _ := handler(context.Background(), req)
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Body, resp.Headers[idemlambda.HeaderReplayed])
	}
	req.Headers["idempotency-key"], req.Body = "g-2", `{}`
	bad, _ := handler(context.Background(), req)
	fmt.Println(bad.StatusCode, bad.Headers["Content-Type"])
	// Output:
	// 201 hello Ada from user-42 replayed=""
	// 201 hello Ada from user-42 replayed="true"
	// 400 application/problem+json
}

// A REST API Lambda (payload 1.0) behind a Cognito user pool authorizer.
func ExampleRESTAPI() {
	store, _, err := idemtest.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	type refund struct {
		Amount int `json:"amount"`
	}
	parse := func(body []byte) (refund, error) {
		var r refund
		return r, json.Unmarshal(body, &r) // any other error is a 400
	}
	handler := idemlambda.RESTAPI(store, parse, func(ctx context.Context, req idemlambda.Request[events.APIGatewayProxyRequest, refund], tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 201, Body: fmt.Appendf(nil, "refunded %d of %s to %s", req.Body.Amount, req.Event.PathParameters["id"], req.Scope)}, nil
	})

	req := events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: "/charges/{id}/refunds", PathParameters: map[string]string{"id": "ch_1"},
		Headers: map[string]string{"Idempotency-Key": "r-1"}, Body: `{"amount":500}`}
	req.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": "user-42"}}
	for range 2 {
		resp, _ := handler(context.Background(), req)
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Body, resp.Headers[idemlambda.HeaderReplayed])
	}
	// Output:
	// 201 refunded 500 of ch_1 to user-42 replayed=""
	// 201 refunded 500 of ch_1 to user-42 replayed="true"
}

// A function URL of auth type AWS_IAM: the scope is the role that signed the
// request, the same across its sessions.
func ExampleFunctionURL() {
	store, _, err := idemtest.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	type job struct {
		Report string `json:"report"`
	}
	parse := func(body []byte) (job, error) {
		var j job
		return j, json.Unmarshal(body, &j)
	}
	handler := idemlambda.FunctionURL(store, parse, func(ctx context.Context, req idemlambda.Request[events.LambdaFunctionURLRequest, job], tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 202, Body: []byte(req.Body.Report + " queued for " + req.Scope)}, nil
	})

	for _, session := range []string{"monday", "tuesday"} {
		req := events.LambdaFunctionURLRequest{RawPath: "/jobs", Headers: map[string]string{"idempotency-key": "job-1"}, Body: `{"report":"q3"}`}
		req.RequestContext.HTTP.Method = "POST"
		req.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
			IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:sts::123456789012:assumed-role/batch/" + session},
		}
		resp, _ := handler(context.Background(), req)
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Body, resp.Headers[idemlambda.HeaderReplayed])
	}
	// Output:
	// 202 q3 queued for arn:aws:sts::123456789012:assumed-role/batch replayed=""
	// 202 q3 queued for arn:aws:sts::123456789012:assumed-role/batch replayed="true"
}

// An ALB target behind an authenticate-oidc rule: the scope is the
// identity the ALB verified (the scope is required: an ALB verifies none of
// its own for a Lambda).
func ExampleALB() {
	store, _, err := idemtest.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	type vote struct {
		Choice string `json:"choice"`
	}
	parse := func(body []byte) (vote, error) {
		var v vote
		return v, json.Unmarshal(body, &v)
	}
	handler := idemlambda.ALB(store, parse, func(ctx context.Context, req idemlambda.Request[events.ALBTargetGroupRequest, vote], tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 201, Body: []byte(req.Scope + " voted " + req.Body.Choice)}, nil
	}, func(o *idemlambda.Options[events.ALBTargetGroupRequest]) { o.Scope = idemlambda.ALBOIDCIdentity })

	req := events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/votes", Body: `{"choice":"tea"}`,
		Headers: map[string]string{"idempotency-key": "v-1", "x-amzn-oidc-identity": "user-42"}}
	for range 2 {
		resp, _ := handler(context.Background(), req)
		fmt.Printf("%s: %s replayed=%q\n", resp.StatusDescription, resp.Body, resp.Headers[idemlambda.HeaderReplayed])
	}
	// Output:
	// 201 Created: user-42 voted tea replayed=""
	// 201 Created: user-42 voted tea replayed="true"
}

// An SQS consumer that counts each order once, however often its message
// is delivered: the count's update commits with the message's marker.
func ExampleSQS() {
	ctx := context.Background()
	store, db, err := idemtest.Open(ctx)
	if err != nil {
		log.Fatal(err)
	}
	counts := "order-counts" // in a deployment, a table of the template
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(counts), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("order"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("order"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		log.Fatal(err)
	}
	type placed struct {
		Order string `json:"order"`
	}
	handle := idemlambda.SQS(store, func(ctx context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error {
		var p placed
		if err := json.Unmarshal([]byte(ev.Event.Body), &p); err != nil {
			return err // this message fails alone, and comes back
		}
		tx.Add(types.TransactWriteItem{Update: &types.Update{TableName: aws.String(counts),
			Key:                       map[string]types.AttributeValue{"order": &types.AttributeValueMemberS{Value: p.Order}},
			UpdateExpression:          aws.String("ADD seen :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		}}, nil)
		return nil
	}, func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = "order-counter" })

	batch := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", Body: `{"order":"o1"}`}, {MessageId: "m-2", Body: `not json`}}}
	for range 2 { // SQS delivers the batch twice
		resp, _ := handle(ctx, batch)
		fmt.Println("failed:", resp.BatchItemFailures)
	}
	out, _ := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(counts), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"order": &types.AttributeValueMemberS{Value: "o1"}}})
	fmt.Println("o1 seen", out.Item["seen"].(*types.AttributeValueMemberN).Value, "time")
	// Output:
	// failed: [{m-2}]
	// failed: [{m-2}]
	// o1 seen 1 time
}

// An EventBridge rule's target: each event takes effect once per id; a
// duplicate delivery is nil, so Lambda does not retry it.
func ExampleEventBridge() {
	store, _, err := idemtest.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	type shipped struct {
		Order string `json:"order"`
	}
	runs := 0
	handle := idemlambda.EventBridge(store, func(ctx context.Context, ev idemlambda.Event[events.CloudWatchEvent], tx *idem.Tx) error {
		var s shipped
		if err := json.Unmarshal(ev.Event.Detail, &s); err != nil {
			return err
		}
		runs++
		fmt.Println("notify the customer of", s.Order)
		return nil
	}, func(o *idemlambda.ConsumerOptions[events.CloudWatchEvent]) { o.Scope = "notifier" })

	ev := events.CloudWatchEvent{ID: "7bf73129-1428", Source: "orders", DetailType: "OrderShipped", Detail: []byte(`{"order":"o1"}`)}
	for range 2 { // EventBridge delivers at least once
		fmt.Println(handle(context.Background(), ev))
	}
	fmt.Println("runs:", runs)
	// Output:
	// notify the customer of o1
	// <nil>
	// <nil>
	// runs: 1
}

// A Step Functions task, or any direct invocation: typed in and out, the
// key read from the input, the stored Out returned on a repeat.
func ExampleFunction() {
	store, _, err := idemtest.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	type task struct {
		Execution string `json:"execution"`
		Order     string `json:"order"`
	}
	type label struct {
		Tracking string `json:"tracking"`
	}
	runs := 0
	ship := idemlambda.Function(store, func(ctx context.Context, ev idemlambda.Event[task], tx *idem.Tx) (label, error) {
		runs++
		return label{Tracking: fmt.Sprintf("trk-%s-%d", ev.Event.Order, runs)}, nil
	}, func(o *idemlambda.ConsumerOptions[task]) {
		o.Scope = "shipper"
		o.Key = func(in *task) (string, error) { return in.Execution, nil }
	}) // lambda.Start(ship)

	for range 2 { // the state machine retries the state
		out, err := ship(context.Background(), task{Execution: "exec-1", Order: "o1"})
		fmt.Println(out.Tracking, err)
	}
	// Output:
	// trk-o1-1 <nil>
	// trk-o1-1 <nil>
}

// A Kinesis consumer keyed by the producer's event id, which its records
// carry: a producer's retry, stored twice under two sequence numbers, is
// applied once. A record that fails holds back the later records of its
// partition key; the answer names it, Lambda's checkpoint.
func ExampleKinesis() {
	store, _, err := idemtest.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	type payment struct {
		ID, Account string
		Amount      int
	}
	handle := idemlambda.Kinesis(store, func(ctx context.Context, ev idemlambda.Event[events.KinesisEventRecord], tx *idem.Tx) error {
		var p payment
		if err := json.Unmarshal(ev.Event.Kinesis.Data, &p); err != nil {
			return err
		}
		if p.Amount < 0 {
			return fmt.Errorf("payment %s: a negative amount", p.ID) // fails, and holds back its account's later payments
		}
		fmt.Println("post", p.ID, "to", p.Account) // in a real consumer: tx.Add of the posting
		return nil
	}, func(o *idemlambda.ConsumerOptions[events.KinesisEventRecord]) {
		o.Scope = "ledger"
		o.Key = func(r *events.KinesisEventRecord) (string, error) {
			var p payment
			return p.ID, json.Unmarshal(r.Kinesis.Data, &p)
		}
	}) // lambda.Start(handle)

	record := func(seq, data string) events.KinesisEventRecord {
		var p payment
		_ = json.Unmarshal([]byte(data), &p)
		return events.KinesisEventRecord{EventID: "shardId-000000000000:" + seq,
			Kinesis: events.KinesisRecord{SequenceNumber: seq, PartitionKey: p.Account, Data: []byte(data)}}
	}
	resp, _ := handle(context.Background(), events.KinesisEvent{Records: []events.KinesisEventRecord{
		record("101", `{"ID":"p-1","Account":"alice","Amount":5}`),
		record("102", `{"ID":"p-1","Account":"alice","Amount":5}`), // the producer's retry
		record("103", `{"ID":"p-2","Account":"alice","Amount":-1}`),
		record("104", `{"ID":"p-3","Account":"alice","Amount":7}`), // after p-2, held back
		record("105", `{"ID":"p-4","Account":"bob","Amount":3}`),
	}})
	fmt.Println("checkpoint:", resp.BatchItemFailures)
	// Output:
	// post p-1 to alice
	// post p-4 to bob
	// checkpoint: [{103}]
}

// A DynamoDB Streams consumer: each change once, by its eventID; a change
// that fails holds back the later changes to its item, and Lambda
// redelivers from the one the answer names.
func ExampleDynamoDBStream() {
	store, _, err := idemtest.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	down := true // the search index the consumer feeds is down, at first
	handle := idemlambda.DynamoDBStream(store, func(ctx context.Context, ev idemlambda.Event[events.DynamoDBEventRecord], tx *idem.Tx) error {
		c := ev.Event.Change
		if down && c.Keys["sku"].String() == "tea" {
			return errors.New("the index is down")
		}
		fmt.Println("index", c.Keys["sku"].String(), "at", c.NewImage["price"].Number())
		return nil
	}, func(o *idemlambda.ConsumerOptions[events.DynamoDBEventRecord]) { o.Scope = "indexer" }) // lambda.Start(handle)

	change := func(seq, sku, price string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventID: "ev-" + seq, EventName: "MODIFY", Change: events.DynamoDBStreamRecord{SequenceNumber: seq,
			Keys:     map[string]events.DynamoDBAttributeValue{"sku": events.NewStringAttribute(sku)},
			NewImage: map[string]events.DynamoDBAttributeValue{"sku": events.NewStringAttribute(sku), "price": events.NewNumberAttribute(price)}}}
	}
	batch := []events.DynamoDBEventRecord{change("1", "tea", "4"), change("2", "cup", "9"), change("3", "tea", "5")}
	resp, _ := handle(context.Background(), events.DynamoDBEvent{Records: batch})
	fmt.Println("checkpoint:", resp.BatchItemFailures)
	down = false
	resp, _ = handle(context.Background(), events.DynamoDBEvent{Records: batch}) // Lambda sends the batch again from the checkpoint
	fmt.Println("checkpoint:", resp.BatchItemFailures)
	// Output:
	// index cup at 9
	// checkpoint: [{1}]
	// index tea at 4
	// index tea at 5
	// checkpoint: []
}
