package rie_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/measure"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
)

// TestColdStart measures each function's cold start under the emulator,
// from starting the process to the first response (an unrouted request,
// answered without DynamoDB), ten times each, beside the smallest Go Lambda.
// The functions reach a local engine holding their tables, as deployed: the
// one call of their start-up (the single-Region check's DescribeTable) costs
// a round trip, not the SDK's retries against an address that refuses it.
// It asserts only that every start answers; BENCH_OUT receives the table
// for BENCHMARKS.md.
func TestColdStart(t *testing.T) {
	if testing.Short() {
		t.Skip("a cold-start measurement, ten starts of each function under the Lambda RIE: make test runs it, make bench writes its table")
	}
	tpl, bin, emulator := built(t)
	endpoint, engine, err := dynamo.Ensure(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Stop() }) // its error is always nil
	db := dynamo.NewClient(endpoint)
	tables := map[string]string{} // logical id: the name created for it
	prefix := "cold-start-" + strings.ToLower(rand.Text()[:8]) + "-"
	err = dynamo.CreateTables(context.Background(), db, tpl.Tables, prefix, func(tb template.Table, name string) {
		t.Cleanup(func() { _, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name}) }) // best effort: a table left behind costs a test engine only space
		tables[tb.LogicalID] = name
	})
	if err != nil {
		t.Fatal(err)
	}
	// The smallest Go Lambda, as the baseline: what the emulator and the Go
	// runtime cost before any code of ours runs.
	hello := filepath.Join(bin, "hello", "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", hello, "./local/rie/testdata/hello")
	build.Dir, build.Env = tpl.Dir, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	fns := append([]template.Function{{LogicalID: "baseline: lambda.Start, nothing else", Package: "./hello"}}, tpl.Functions...)
	const starts = 10
	table := "| function | bootstrap (linux/amd64, stripped) | process start to first response, median of 10 | over the baseline |\n|---|---|---|---|\n"
	base := 0.0
	for _, fn := range fns {
		refs := map[string]string{}
		for _, v := range fn.Env {
			if target, ok := strings.CutPrefix(v, template.RefPrefix); ok {
				if refs[target] = tables[target]; refs[target] == "" { // not a table
					refs[target] = "cold-start-" + target
				}
			}
		}
		env, err := fn.LocalEnv(refs, map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
			"DYNAMODB_ENDPOINT": endpoint, "PROVIDER_LOCAL_URL": "http://127.0.0.1:9", "PROVIDER_SECRET_KEY": "sk"})
		if err != nil {
			t.Fatal(err)
		}
		var wall []float64
		for range starts {
			start := time.Now()
			rt, err := rie.Start(context.Background(), emulator, fn.Bootstrap(bin), rie.Options{Env: env})
			if err != nil {
				t.Fatal(err)
			}
			_, err = rt.Invoke(context.Background(), []byte(`{"routeKey":"GET /cold-start","Records":[]}`))
			wall = append(wall, float64(time.Since(start))/float64(time.Millisecond))
			logs := rt.Logs()
			rt.Stop()
			if err != nil && !os.IsTimeout(err) {
				t.Fatalf("%s: %v\n%s", fn.LogicalID, err, logs)
			}
		}
		info, err := os.Stat(fn.Bootstrap(bin))
		if err != nil {
			t.Fatal(err)
		}
		if base == 0 {
			base = measure.Median(wall)
		}
		table += fmt.Sprintf("| %s | %.1f MB | %.1f ms | %+.1f ms |\n", fn.LogicalID, float64(info.Size())/1e6, measure.Median(wall), measure.Median(wall)-base)
	}
	table = "Engine: DynamoDB Local 3.3.1, on loopback.\n\n" + table + "\n" + describeCost(t, db, tables["IdempotencyTable"])
	t.Log("\n" + table)
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// describeCost prices the single-Region check's one call at cold start: a
// DescribeTable on a new client (a new connection, as in a new process),
// beside the same call on a warm client and beside the first PutItem a new
// client makes, which is what a first request would pay for the connection
// if the check were moved out of the cold start. Twenty of each,
// interleaved; it asserts only that every call answers.
func describeCost(t *testing.T, db *dynamodb.Client, table string) string {
	t.Helper()
	ctx := context.Background()
	endpoint := *db.Options().BaseEndpoint
	describe := func(c *dynamodb.Client) float64 {
		start := time.Now()
		if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table}); err != nil {
			t.Fatal(err)
		}
		return float64(time.Since(start)) / float64(time.Millisecond)
	}
	put := func(c *dynamodb.Client, i int) float64 {
		start := time.Now()
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("cold-%d-%s", i, rand.Text())}, "expires_at": &types.AttributeValueMemberN{Value: "1"}}})
		if err != nil {
			t.Fatal(err)
		}
		return float64(time.Since(start)) / float64(time.Millisecond)
	}
	var fresh, warm, firstPut []float64
	warmClient := dynamo.NewClient(endpoint)
	describe(warmClient)
	for i := range 20 {
		fresh = append(fresh, describe(dynamo.NewClient(endpoint)))
		warm = append(warm, describe(warmClient))
		firstPut = append(firstPut, put(dynamo.NewClient(endpoint), i))
	}
	return fmt.Sprintf("The single-Region check's DescribeTable, median of 20 (interleaved):\n\n"+
		"| call | ms |\n|---|---|\n"+
		"| DescribeTable on a new client (the cold start's, with its connection) | %.2f |\n"+
		"| DescribeTable on a warm client (the round trip alone) | %.2f |\n"+
		"| PutItem on a new client (a first request's first call, with its connection) | %.2f |\n",
		measure.Median(fresh), measure.Median(warm), measure.Median(firstPut))
}
