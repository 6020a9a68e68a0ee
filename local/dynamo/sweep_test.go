package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/measure"
)

// TestTransactionCostByTableSize measures the engine's TransactWriteItems
// against tables already holding 1,000, 10,000 and 100,000 records: the
// claim-and-order shape of pkg/idem's commit, one in five a duplicate that
// is cancelled. It checks that every distinct transaction committed and that
// the cancelled ones left nothing behind; the throughput is reported, not
// asserted (wall-clock time is the machine's). The sizes are visited in a
// rotating order over the rounds, so that no size always runs first.
//
// make bench runs it (ENGINE_SWEEP=1, BENCH_OUT for the table); make test
// does not, as loading 111,000 records takes a while.
func TestTransactionCostByTableSize(t *testing.T) {
	if os.Getenv("ENGINE_SWEEP") == "" {
		t.Skip("set ENGINE_SWEEP=1 (make bench runs it)")
	}
	sizes := []int{1000, 10000, 100000}
	if v := os.Getenv("ENGINE_SWEEP_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	txs, rounds, clients := measure.EnvInt("ENGINE_SWEEP_TX", 500), measure.EnvInt("ENGINE_SWEEP_ROUNDS", 3), measure.EnvInt("ENGINE_SWEEP_CLIENTS", 8)
	db := dynamotest.Client(t, func(o *dynamodb.Options) { o.RetryMaxAttempts = 10 })
	records, rows := map[int]string{}, map[int]string{}
	for _, size := range sizes {
		t0 := time.Now()
		records[size], rows[size] = dynamotest.Table(t, db, "IdempotencyTable"), dynamotest.Table(t, db, "OrdersTable")
		dynamotest.Fill(t, db, records[size], size, 4102444800)
		t.Logf("loaded %d records in %v", size, time.Since(t0).Round(time.Millisecond))
	}
	perSec := map[int][]float64{}
	committed := map[int]int{}
	for r := range rounds {
		for i := range sizes {
			size := sizes[(i+r)%len(sizes)]
			rate, n := transactions(t, db, sweepRun{records[size], rows[size], "r" + strconv.Itoa(r), txs, clients})
			perSec[size] = append(perSec[size], rate)
			committed[size] += n
		}
	}
	for _, size := range sizes {
		want := int64(size + committed[size])
		if got := itemCount(t, db, records[size]); got != want {
			t.Errorf("%d records: the table holds %d items, want %d (preloaded plus committed)", size, got, want)
		}
	}
	report := sweepReport(sizes, perSec, txs, rounds, clients)
	t.Log("\n" + report)
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sweepReport(sizes []int, perSec map[int][]float64, txs, rounds, clients int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "TransactWriteItems (a conditional put of a record and a put of an order), %d per size and round, %d rounds, %d clients, one in five cancelled\n\n", txs, rounds, clients)
	fmt.Fprintln(&b, "| records already in the table | transactions/s (median) | vs the first size (median, min–max over rounds) |")
	fmt.Fprintln(&b, "|---|---|---|")
	base := perSec[sizes[0]]
	for _, size := range sizes {
		ratios := make([]float64, rounds)
		for r := range rounds {
			ratios[r] = perSec[size][r] / base[r]
		}
		fmt.Fprintf(&b, "| %d | %.0f | %.2f (%.2f–%.2f) |\n", size, measure.Median(perSec[size]), measure.Median(ratios), slices.Min(ratios), slices.Max(ratios))
	}
	return b.String()
}

// sweepRun is one run of transactions: the records and rows tables, the
// prefix of its keys, how many transactions, and from how many clients.
type sweepRun struct {
	records, rows, prefix string
	count, clients        int
}

// transactions sends run.count transactions from run.clients workers and
// returns their rate and how many committed. Every fifth repeats the key
// sent four before it, so that one of the two must be cancelled: each key
// must commit exactly once.
func transactions(t *testing.T, db *dynamodb.Client, run sweepRun) (float64, int) {
	t.Helper()
	records, rows, prefix, count, clients := run.records, run.rows, run.prefix, run.count, run.clients
	next := make(chan int)
	commits := make([]atomic.Int32, count)
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				key := i - i%5/4*4 // i, or i-4 for every fifth
				id := prefix + "-" + strconv.Itoa(key)
				_, err := db.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: aws.String(records), Item: item{"pk": s(id), "status": s("COMPLETED")}, ConditionExpression: aws.String("attribute_not_exists(pk)"),
						ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
					{Put: &types.Put{TableName: aws.String(rows), Item: item{"scope": s("sweep"), "order_id": s(prefix + "-" + strconv.Itoa(i))}}},
				}})
				var cancelled *types.TransactionCanceledException
				switch {
				case err == nil:
					commits[key].Add(1)
				case !errors.As(err, &cancelled):
					failed.Add(1)
				}
			}
		}()
	}
	for i := range count {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d transactions failed other than by cancellation", f)
	}
	total := 0
	for key := range commits {
		c := int(commits[key].Load())
		if key%5 != 4 && c != 1 {
			t.Fatalf("key %s-%d committed %d times, want once", prefix, key, c)
		}
		total += c
	}
	return float64(count) / elapsed.Seconds(), total
}

func itemCount(t *testing.T, db *dynamodb.Client, table string) int64 {
	t.Helper()
	out, err := db.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToInt64(out.Table.ItemCount)
}
