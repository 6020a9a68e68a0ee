package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"slices"
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
	warm := warmUp(t, []string{"DoAtomic"}, 32)
	var report strings.Builder
	fmt.Fprintf(&report, "Engine: %s, warmed first with %d requests to Do and 500 to DoAtomic, unmeasured (%s). The order function's POST /orders handler in one process (one Store, one client), %d requests per row, 20%% duplicates; orders per logical operation asserted at every row:\n\n", engineVersion, warmUpRequests(), warm, n)
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
// same DynamoDB calls made bare (floorCreate); it reports each path's time
// per request over its floor's in the same round, and where the time went
// (the attempts by answer, the client's and the engine's CPU). The floors
// keep the guarantee on these requests too (checked like the library's).
//
// The engine is warmed first (LOAD_WARMUP requests per way, unmeasured) and
// the rounds alternate the ways' order with its mirror, so that an engine
// still speeding up (its JIT) or slowing down favours no way.
func TestLoadFloor(t *testing.T) {
	n := measure.EnvInt("LOAD_FLOOR_REQUESTS", 150)
	clients := measure.EnvInt("LOAD_CLIENTS", 32)
	rounds := measure.EnvInt("LOAD_ROUNDS", 4)
	ways := []string{"plain", "Do", "Do floor", "DoAtomic", "DoAtomic floor"}
	warm := warmUp(t, ways, clients)
	all, per := map[string]*loadResult{}, map[string][]*loadResult{}
	for _, v := range ways {
		all[v] = &loadResult{}
	}
	for r := range rounds {
		p := newPlan(max(n/rounds, 1), 0.2, 400+uint64(r), "")
		for i := range ways {
			v := ways[i]
			if r%2 == 1 {
				v = ways[len(ways)-1-i]
			}
			res := runLoad(t, v, p, clients, "")
			all[v].merge(res)
			per[v] = append(per[v], res)
		}
	}
	// over is a way's figure over its floor's, per round: median (min–max).
	over := func(v string, figure func(*loadResult) float64) string {
		switch v {
		case "plain":
			return "1 (its own floor)"
		case "Do floor", "DoAtomic floor":
			return "1"
		}
		rs := make([]float64, rounds)
		for r := range rounds {
			rs[r] = figure(per[v][r]) / figure(per[v+" floor"][r])
		}
		return measure.Spread(rs)
	}
	timePer := func(r *loadResult) float64 { return 1 / r.throughput() }
	var report strings.Builder
	fmt.Fprintf(&report, "Engine: %s, warmed first with %d requests to Do and 500 to each way, unmeasured (%s). POST /orders, %d requests per way in %d rounds (the ways' order and its mirror alternating), %d concurrent clients, 20%% duplicates; the floor is the same DynamoDB calls made bare:\n\n", engineVersion, warmUpRequests(), warm, len(all["plain"].latencies), rounds, clients)
	fmt.Fprintln(&report, "| way | requests/s | p50 ms | p99 ms | time per request over its floor's (median, min–max over rounds) | orders | logical operations |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|---|")
	for _, v := range ways {
		res := all[v]
		fmt.Fprintf(&report, "| %s | %.0f | %.1f | %.1f | %s | %d | %d |\n", v, res.throughput(), res.pct(50), res.pct(99), over(v, timePer), res.orders, res.ops)
	}
	fmt.Fprintf(&report, "\nWhere each way's time went, per request (the same runs): its DynamoDB attempts, the SDK's retries included, and those answered with a conflict, a throttle or a server error (sent again); the CPU of this process (the handler and the load driver) and of the engine's JVM while the way ran, each over its floor's per round (median, min–max):\n\n")
	fmt.Fprintln(&report, "| way | attempts | sent again | connections opened | client CPU, µs | over its floor's | engine CPU, µs | over its floor's | attempts by answer, per request |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|---|---|---|")
	for _, v := range ways {
		res := all[v]
		attempts, again := res.attempts()
		fmt.Fprintf(&report, "| %s | %.3f | %.3f | %.3f | %.0f | %s | %.0f | %s | %s |\n", v, attempts, again, float64(res.connections)/float64(len(res.latencies)),
			res.perRequest(res.clientCPU), over(v, func(r *loadResult) float64 { return r.perRequest(r.clientCPU) }),
			res.perRequest(res.engineCPU), over(v, func(r *loadResult) float64 { return r.perRequest(r.engineCPU) }),
			answersText(res.answers, len(res.latencies)))
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// warmUpRequests is LOAD_WARMUP, the requests that warmUp sends.
func warmUpRequests() int { return measure.EnvInt("LOAD_WARMUP", 0) }

// warmUp sends warmUpRequests requests to Do in batches of 500, then one
// batch to each of ways, none of it measured, and returns the engine's CPU
// per request over the batches: a new engine's JVM compiles its hot paths
// over its first few thousand requests (in one run its CPU per Do request
// fell from 10 ms on the first 500 to about 2.2 ms after 5,000), so a way
// measured first would pay for the engine's start and look several times
// dearer than one measured after it. make bench sets LOAD_WARMUP; make
// test, which asserts no time, does not.
func warmUp(t *testing.T, ways []string, clients int) string {
	t.Helper()
	n := warmUpRequests()
	if n == 0 {
		return "none"
	}
	const batch = 500
	var curve []string
	for i := 0; i < n; i += batch {
		res := runLoad(t, "Do", newPlan(batch, 0.2, 900+uint64(i), "warm-"+strconv.Itoa(i)+"-"), clients, "")
		curve = append(curve, fmt.Sprintf("%.1f", res.perRequest(res.engineCPU)/1000))
	}
	for _, v := range ways {
		runLoad(t, v, newPlan(batch, 0.2, 901, "warm-"+v+"-"), clients, "")
	}
	return "Do's engine CPU per request, ms, batch by batch of " + strconv.Itoa(batch) + ": " + strings.Join(curve, ", ")
}

// answersText lists attempts by answer per request, most frequent first.
func answersText(a map[string]int, n int) string {
	keys := slices.SortedFunc(maps.Keys(a), func(x, y string) int { return cmp.Or(a[y]-a[x], strings.Compare(x, y)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.3g", k, float64(a[k])/float64(n))
	}
	return strings.Join(parts, "; ")
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
