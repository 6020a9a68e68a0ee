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
	"github.com/idemkeys/idem/internal/httpapi"
	"github.com/idemkeys/idem/local/measure"
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
	if testing.Short() {
		t.Skip("a concurrency measurement, many invocations in one process: make test runs it small, make bench in full")
	}
	n := measure.EnvInt("CONCURRENCY_REQUESTS", 64)
	warm := warmUp(t, []string{"DoAtomic"}, 32)
	var report strings.Builder
	fmt.Fprintf(&report, "Engine: %s, warmed first with %d requests to Do and 500 to DoAtomic, unmeasured (%s). The order function's POST /orders handler in one process (one Store, one client), %d requests per row, 20%% duplicates; orders per logical operation asserted at every row; achieved concurrency is the invocations' time summed over the row's:\n\n", engineVersion, warmUpRequests(), warm, n)
	fmt.Fprintln(&report, "| invocations at once | path | requests/s | p50 ms | p99 ms | achieved concurrency | orders | logical operations that succeeded | orders per key |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|---|---|---|")
	for _, c := range []int{1, 8, 32, 64} {
		p := newPlan(n, 0.2, 300+uint64(c), "") //nolint:gosec // G115: c is one of the row's few positive counts
		for _, v := range []string{"Do", "DoAtomic"} {
			res := runLoad(t, v, p, c, "")
			fmt.Fprintf(&report, "| %d | %s | %.0f | %.1f | %.1f | %.1f | %d | %d | %.0f |\n", c, v, res.throughput(), res.pct(50), res.pct(99), res.achieved(), res.orders, res.succeededOps, float64(res.orders)/float64(res.succeededOps))
		}
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// achieved is how many invocations overlapped on average: their time
// summed over the row's, as the emulator's test reports it beside this one.
func (r *loadResult) achieved() float64 {
	var sum time.Duration
	for _, l := range r.latencies {
		sum += l
	}
	return float64(sum) / float64(r.elapsed)
}

// TestLoadFloor runs POST /orders under load beside its floor, the same
// DynamoDB calls made bare (floorCreate), in pairs that share one run:
// each client sends a request to the path and the same request to its
// floor, back to back (who goes first alternating), on tables of their
// own (whose tables are made first alternating by round), so that both
// meet the same engine at the same moments. The ratio is
// paired: the median over requests of the path's time over its floor's for
// the same request (measure.PairedRatio), one per round. The floor beside
// itself, for each floor, is the control: what the method reads where
// there is no difference. The floors keep the guarantee on these requests
// too (checked like the library's); each side's attempts are counted by
// answer.
//
// Two readings it replaced, each shown wrong by its control: runs made one
// way after another read the floor at 1.15 (1.01–1.20) of itself (the
// engine's JVM collections and compilations land on whichever run is
// going), and each side's p50 taken apart, per round, read the floor at
// 0.21 to 3.13 of itself (a pause lands on whichever side's requests are
// in flight, and moves a round's p50 wholesale).
func TestLoadFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("a load measurement beside the bare DynamoDB calls: make test runs it small, make bench in full")
	}
	n := measure.EnvInt("LOAD_FLOOR_REQUESTS", 150)
	clients := measure.EnvInt("LOAD_CLIENTS", 32)
	rounds := measure.EnvInt("LOAD_ROUNDS", 3)
	pairs := [][2]string{{"Do", "Do floor"}, {"DoAtomic", "DoAtomic floor"}, {"Do floor", "Do floor"}, {"DoAtomic floor", "DoAtomic floor"}}
	warm := warmUp(t, []string{"Do floor", "DoAtomic", "DoAtomic floor"}, clients)
	type side struct {
		all    loadResult
		ratios []float64
		rate   []float64
	}
	got := make([][2]*side, len(pairs))
	for i := range got {
		got[i] = [2]*side{{}, {}}
	}
	for r := range rounds {
		p := newPlan(max(n/rounds, 1), 0.2, 400+uint64(r), "")
		for i := range pairs {
			k := (i + r) % len(pairs)
			var a, b *loadResult
			if r%2 == 0 {
				a, b = runPair(t, pairs[k][0], pairs[k][1], p, clients)
			} else { // the other side's tables made first
				b, a = runPair(t, pairs[k][1], pairs[k][0], p, clients)
			}
			got[k][0].all.merge(a)
			got[k][1].all.merge(b)
			got[k][0].ratios = append(got[k][0].ratios, measure.PairedRatio(a.latencies, b.latencies))
			got[k][0].rate = append(got[k][0].rate, 2*a.throughput())
		}
	}
	var report strings.Builder
	fmt.Fprintf(&report, "Engine: %s, warmed first with %d requests to Do and 500 to each way, unmeasured (%s). POST /orders, %d requests per side in %d rounds, %d concurrent clients each sending every request to both sides of its pair, back to back (who goes first alternating), each side on tables of its own, 20%% duplicates; the floor is the same DynamoDB calls made bare; the pairs of a floor beside itself are the method's controls:\n\n",
		engineVersion, warmUpRequests(), warm, len(got[0][0].all.latencies), rounds, clients)
	fmt.Fprintln(&report, "| pair | requests/s, both sides | p50 ms | p99 ms | second side p50 ms | second side p99 ms | time over the second side's for the same request: median over requests, per round (median, min–max over rounds) | the same, all rounds' requests together | orders per logical operation (both sides) |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|---|---|---|")
	for k, pr := range pairs {
		a, b := &got[k][0].all, &got[k][1].all
		name := pr[0] + " beside " + pr[1]
		if pr[0] == pr[1] {
			name = "control: " + name
		}
		fmt.Fprintf(&report, "| %s | %.0f | %.1f | %.1f | %.1f | %.1f | %s | %.2f | %.0f, %.0f |\n", name, measure.Median(got[k][0].rate), a.pct(50), a.pct(99), b.pct(50), b.pct(99),
			measure.Spread(got[k][0].ratios), measure.PairedRatio(a.latencies, b.latencies), float64(a.orders)/float64(a.succeededOps), float64(b.orders)/float64(b.succeededOps))
	}
	fmt.Fprintf(&report, "\nEach side's DynamoDB attempts per request in the same runs, the SDK's retries included (sent again: answered with a conflict, a throttle or a server error), and the connections it opened:\n\n")
	fmt.Fprintln(&report, "| pair | side | attempts | sent again | connections opened | attempts by answer, per request |")
	fmt.Fprintln(&report, "|---|---|---|---|---|---|")
	for k, pr := range pairs {
		for i, sd := range got[k] {
			res := &sd.all
			attempts, again := res.attempts()
			fmt.Fprintf(&report, "| %s beside %s | %s | %.3f | %.3f | %.3f | %s |\n", pr[0], pr[1], []string{"first", "second"}[i]+": "+pr[i], attempts, again,
				float64(res.connections)/float64(len(res.latencies)), answersText(res.answers, len(res.latencies)))
		}
	}
	cpuPerRequest(t, &report, n, clients, rounds)
	t.Log("\n" + report.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cpuPerRequest runs each way alone, one after another in an order that
// rotates by round and runs backwards every other round (so that a way
// comes before its floor in half the rounds and after it in the other
// half), on the same requests within a round, and reports the
// CPU per request of this process and of the engine. This process's is the
// driver's (the events it builds, its clients), the SDK's and the
// handler's; the driver alone (a handler that makes no call) is measured
// in the same rounds, so that the handler's own share is this process's
// less the driver's. Each floor is run twice, the second run being its
// control: what the method reads where there is no difference.
func cpuPerRequest(t *testing.T, report *strings.Builder, n, clients, rounds int) {
	t.Helper()
	type run struct{ label, variant string }
	runs := []run{{driverAlone, driverAlone}, {"Do", "Do"}, {"Do floor", "Do floor"}, {"Do floor, again", "Do floor"},
		{"DoAtomic", "DoAtomic"}, {"DoAtomic floor", "DoAtomic floor"}, {"DoAtomic floor, again", "DoAtomic floor"}}
	client, engine := map[string][]float64{}, map[string][]float64{}
	all := map[string]*loadResult{}
	for r := range rounds {
		p := newPlan(max(n/rounds, 1), 0.2, 500+uint64(r), "")
		for i := range runs {
			k := (i + r/2) % len(runs)
			if r%2 == 1 {
				k = len(runs) - 1 - k
			}
			w := runs[k]
			res := runLoad(t, w.variant, p, clients, "")
			client[w.label] = append(client[w.label], res.perRequest(res.clientCPU))
			engine[w.label] = append(engine[w.label], res.perRequest(res.engineCPU))
			if all[w.label] == nil {
				all[w.label] = &loadResult{}
			}
			all[w.label].merge(res)
		}
	}
	// Each way's per-round series, and two series combined round by round.
	zip := func(x, y []float64, f func(x, y float64) float64) []float64 {
		xs := make([]float64, rounds)
		for r := range rounds {
			xs[r] = f(x[r], y[r])
		}
		return xs
	}
	over := func(x, y float64) float64 { return x / y }
	less := func(x, y float64) float64 { return x - y }
	plus := func(x, y float64) float64 { return x + y }
	handler := func(w string) []float64 { return zip(client[w], client[driverAlone], less) }
	both := func(w string) []float64 { return zip(client[w], engine[w], plus) }
	fmt.Fprintf(report, "\nCPU per request, each way run alone (%d requests per way and round, %d rounds, the ways' order rotating and reversed every other round, %d clients, the same requests for every way in a round). This process's CPU is the driver's, the SDK's and the handler's; the handler's is this process's less the driver's alone (a handler that makes no call) in the same round. Each floor run a second time is its control. Ratios and differences are per round, over the way beside it (median, min–max over rounds):\n\n", max(n/rounds, 1), rounds, clients)
	fmt.Fprintln(report, "| way | beside | DynamoDB attempts per request (sent again) | this process, µs per request | the handler's, µs per request | the handler's over the other's | the handler's less the other's, µs per request | this process's allocations per request (KiB), all rounds | the engine, µs per request | the engine's over the other's | this process and the engine together, over the other's |")
	fmt.Fprintln(report, "|---|---|---|---|---|---|---|---|---|---|---|")
	rows := [][3]string{{"Do", "Do floor", ""}, {"Do floor, again", "Do floor", "control: "}, {"DoAtomic", "DoAtomic floor", ""}, {"DoAtomic floor, again", "DoAtomic floor", "control: "}}
	for _, row := range rows {
		a, b := row[0], row[1]
		attempts, again := all[a].attempts()
		fmt.Fprintf(report, "| %s%s | %s | %.3f (%.3f) | %.0f | %.0f | %s | %s | %s | %.0f | %s | %s |\n", row[2], a, b, attempts, again,
			measure.Median(client[a]), measure.Median(handler(a)),
			measure.Spread(zip(handler(a), handler(b), over)), spreadDiff(zip(handler(a), handler(b), less)), allocText(all[a]),
			measure.Median(engine[a]), measure.Spread(zip(engine[a], engine[b], over)), measure.Spread(zip(both(a), both(b), over)))
	}
	for _, f := range []string{"Do floor", "DoAtomic floor", driverAlone} {
		attempts, again := all[f].attempts()
		fmt.Fprintf(report, "| %s | | %.3f (%.3f) | %.0f | %.0f | | | %s | %.0f | | |\n", f, attempts, again,
			measure.Median(client[f]), measure.Median(handler(f)), allocText(all[f]), measure.Median(engine[f]))
	}
}

// allocText is what this process allocated per request over res's runs:
// objects, and KiB.
func allocText(res *loadResult) string {
	n := float64(len(res.latencies))
	return fmt.Sprintf("%.0f (%.1f)", float64(res.mallocs)/n, float64(res.allocated)/n/1024)
}

// spreadDiff renders differences as "median (min to max)", in whole units.
func spreadDiff(xs []float64) string {
	return fmt.Sprintf("%+.0f (%+.0f to %+.0f)", measure.Median(xs), slices.Min(xs), slices.Max(xs))
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
// without the library, the function's own work (its router, the order's
// id, its Location header) done as the function does it. A duplicate gets
// the stored response from the item its failed condition returns, or a 409
// while the key is in progress. It
// is the floor for the load table, not a design: it has no lease
// takeover, no settling of unknown outcomes, no limits.
func (s *server) floorCreate(idemTable string, atomic bool) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		scope, body, refusal := httpapi.CheckRequest(&req, s.scopeClaim, maxBody)
		if refusal != nil {
			return httpx.Refused(refusal), nil
		}
		parsed, err := parseOrder(body)
		if errors.As(err, &refusal) {
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
		id := "ord_" + strings.ToLower(rand.Text()[:20]) // as the function's create makes it
		o := s.newOrder(scope, id, parsed)
		item, err := attributevalue.MarshalMap(&o)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		resp := httpx.JSON(http.StatusCreated, o)
		location := "/orders/" + id
		resp.Headers["Location"] = location
		done := make(map[string]types.AttributeValue, len(rec)+2)
		for k, v := range rec {
			done[k] = v
		}
		done["status"] = &types.AttributeValueMemberS{Value: "COMPLETED"}
		done["completed_at"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)}
		done["response"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"status":  &types.AttributeValueMemberN{Value: "201"},
			"headers": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"Content-Type": &types.AttributeValueMemberS{Value: "application/json"}, "Location": &types.AttributeValueMemberS{Value: location}}},
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
