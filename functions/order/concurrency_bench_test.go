package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/functions/internal/httpx"
	"github.com/idemkeys/idem/local/measure"
	"github.com/idemkeys/idem/pkg/httpapi"
)

// engineVersion is DynamoDB Local's, as local/ensure-dynamodb-local.sh pins it.
const engineVersion = "DynamoDB Local 3.3.1"

// TestConcurrentInvocations runs the order function's real POST /orders
// handler in one process, one Store and one client, with 1, 8, 32 and 64
// invocations at once: what one execution environment of Lambda Managed
// Instances does with AWS_LAMBDA_MAX_CONCURRENCY set (aws-lambda-go runs
// that many invoke loops, each calling the handler). 20% of the requests
// repeat a recent key, so duplicates meet in flight. It asserts the
// guarantee at every level (one order per logical operation that
// succeeded, no request failed: runLoad's checkGuarantee), never the time.
// make test runs it small; make bench runs CONCURRENCY_REQUESTS=1200.
func TestConcurrentInvocations(t *testing.T) {
	n := measure.EnvInt("CONCURRENCY_REQUESTS", 64)
	var report strings.Builder
	fmt.Fprintf(&report, "Engine: %s. The order function's POST /orders handler in one process (one Store, one client), %d requests per row, 20%% duplicates; orders per logical operation asserted at every row:\n\n", engineVersion, n)
	fmt.Fprintln(&report, "| invocations at once | path | requests/s | p50 ms | p99 ms | orders | logical operations that succeeded | orders per key |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|---|---|")
	for _, c := range []int{1, 8, 32, 64} {
		p := newPlan(n, 0.2, 300+uint64(c), "")
		for _, v := range []string{"Do", "DoAtomic"} {
			res := runLoad(t, v, p, c, "")
			fmt.Fprintf(&report, "| %d | %s | %.0f | %.1f | %.1f | %d | %d | %.0f |\n", c, v, res.throughput(), res.pct(50), res.pct(99), res.orders, res.succeededOps, float64(res.orders)/float64(res.succeededOps))
		}
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadFloor runs POST /orders under load five ways on the same
// requests: plain, Do, DoAtomic, and each idempotent path's floor, the
// same DynamoDB calls made bare (floorCreate); it reports each path's
// throughput over its floor's in the same round. The floors keep the
// guarantee on these requests too (checked like the library's).
func TestLoadFloor(t *testing.T) {
	n := measure.EnvInt("LOAD_FLOOR_REQUESTS", 150)
	clients := measure.EnvInt("LOAD_CLIENTS", 32)
	rounds := measure.EnvInt("LOAD_ROUNDS", 3)
	ways := []string{"plain", "Do", "Do floor", "DoAtomic", "DoAtomic floor"}
	all, rates := map[string]*loadResult{}, map[string][]float64{}
	for _, v := range ways {
		all[v] = &loadResult{}
	}
	for r := range rounds {
		p := newPlan(max(n/rounds, 1), 0.2, 400+uint64(r), "")
		for i := range ways {
			v := ways[(i+r)%len(ways)]
			res := runLoad(t, v, p, clients, "")
			all[v].merge(res)
			rates[v] = append(rates[v], res.throughput())
		}
	}
	ratio := func(a, b string) string {
		rs := make([]float64, rounds)
		for r := range rounds {
			rs[r] = rates[b][r] / rates[a][r] // time over time: the floor's throughput over the path's
		}
		return measure.Spread(rs)
	}
	var report strings.Builder
	fmt.Fprintf(&report, "Engine: %s. POST /orders, %d requests per way in %d rounds (the ways' order rotating), %d concurrent clients, 20%% duplicates; the floor is the same DynamoDB calls made bare:\n\n", engineVersion, len(all["plain"].latencies), rounds, clients)
	fmt.Fprintln(&report, "| way | requests/s | p50 ms | p99 ms | time per request over its floor's (median, min–max over rounds) | orders | logical operations |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|---|")
	for _, v := range ways {
		over := "1 (its own floor)"
		switch v {
		case "Do", "DoAtomic":
			over = ratio(v, v+" floor")
		case "Do floor", "DoAtomic floor":
			over = "1"
		}
		res := all[v]
		fmt.Fprintf(&report, "| %s | %.0f | %.1f | %.1f | %s | %d | %d |\n", v, res.throughput(), res.pct(50), res.pct(99), over, res.orders, res.ops)
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// floorCreate is POST /orders with the DynamoDB calls of Do (atomic false:
// a conditional PutItem claims the key, one TransactWriteItems commits the
// record and the order) or of DoAtomic (one TransactWriteItems), made bare,
// with the record's items written by hand: what the library's calls cost
// without the library. A duplicate gets the stored response from the item
// its failed condition returns, or a 409 while the key is in progress. It
// is the floor for the load table, not a design: it has no lease
// takeover, no settling of unknown outcomes, no limits.
func (s *server) floorCreate(idemTable string, atomic bool) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		scope, body, refusal := httpapi.CheckRequest(&req, s.scopeClaim, maxBody)
		if refusal != nil {
			return httpx.Refused(refusal), nil
		}
		parsed, err := parseOrder(body)
		if refusal, ok := err.(*httpapi.Refusal); ok {
			return httpx.Refused(refusal), nil
		}
		key := req.Headers["idempotency-key"]
		sum := sha256.Sum256(body)
		now := time.Now()
		rec := map[string]types.AttributeValue{
			"pk":          &types.AttributeValueMemberS{Value: strconv.Itoa(len(scope)) + ":" + scope + ":" + key},
			"scope":       &types.AttributeValueMemberS{Value: scope},
			"key":         &types.AttributeValueMemberS{Value: key},
			"fingerprint": &types.AttributeValueMemberS{Value: "v2:" + hex.EncodeToString(sum[:])},
			"status":      &types.AttributeValueMemberS{Value: "IN_PROGRESS"},
			"lease_token": &types.AttributeValueMemberS{Value: rand.Text()},
			"lease_until": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(30*time.Second).UnixMilli(), 10)},
			"expires_at":  &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(24*time.Hour).Unix(), 10)},
			"attempts":    &types.AttributeValueMemberN{Value: "1"},
			"created_at":  &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
		}
		fresh := &types.Put{TableName: aws.String(idemTable), Item: rec, ConditionExpression: aws.String("attribute_not_exists(pk) OR expires_at < :now_s"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":now_s": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)}},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
		if !atomic {
			_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: fresh.TableName, Item: rec, ConditionExpression: fresh.ConditionExpression,
				ExpressionAttributeValues: fresh.ExpressionAttributeValues, ReturnValuesOnConditionCheckFailure: fresh.ReturnValuesOnConditionCheckFailure})
			var ccf *types.ConditionalCheckFailedException
			if errors.As(err, &ccf) {
				return floorDuplicate(ccf.Item), nil
			} else if err != nil {
				return httpapi.ErrorResponse(503, "internal_error", err.Error()), nil
			}
		}
		o := s.newOrder(scope, "ord_"+strconv.FormatUint(mrand.Uint64(), 36), parsed)
		item, err := attributevalue.MarshalMap(&o)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		resp := httpx.JSON(http.StatusCreated, o)
		done := make(map[string]types.AttributeValue, len(rec)+2)
		for k, v := range rec {
			done[k] = v
		}
		done["status"] = &types.AttributeValueMemberS{Value: "COMPLETED"}
		done["completed_at"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)}
		done["response"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"status":  &types.AttributeValueMemberN{Value: "201"},
			"headers": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"Content-Type": &types.AttributeValueMemberS{Value: "application/json"}}},
			"body":    &types.AttributeValueMemberB{Value: []byte(resp.Body)},
		}}
		put := *fresh
		put.Item = done
		if !atomic { // fenced on the lease just taken
			put.ConditionExpression = aws.String("#status = :in_progress AND lease_token = :mine")
			put.ExpressionAttributeNames = map[string]string{"#status": "status"}
			put.ExpressionAttributeValues = map[string]types.AttributeValue{":in_progress": &types.AttributeValueMemberS{Value: "IN_PROGRESS"}, ":mine": rec["lease_token"]}
		}
		_, err = s.db.(interface {
			TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
		}).TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(rand.Text()), TransactItems: []types.TransactWriteItem{
			{Put: &put},
			{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(order_id)")}},
		}})
		var tce *types.TransactionCanceledException
		switch {
		case errors.As(err, &tce) && len(tce.CancellationReasons) > 0 && aws.ToString(tce.CancellationReasons[0].Code) == "ConditionalCheckFailed":
			return floorDuplicate(tce.CancellationReasons[0].Item), nil
		case err != nil:
			return httpapi.ErrorResponse(503, "internal_error", err.Error()), nil
		}
		return resp, nil
	}
}

// floorDuplicate answers from the record a failed condition returned: its
// stored response, or 409 while it is in progress.
func floorDuplicate(item map[string]types.AttributeValue) events.APIGatewayV2HTTPResponse {
	if st, _ := item["status"].(*types.AttributeValueMemberS); st == nil || st.Value != "COMPLETED" {
		return httpapi.ErrorResponse(409, "in_progress", "in progress")
	}
	r, _ := item["response"].(*types.AttributeValueMemberM)
	b, _ := r.Value["body"].(*types.AttributeValueMemberB)
	return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json", "Idempotent-Replayed": "true"}, Body: string(b.Value)}
}
