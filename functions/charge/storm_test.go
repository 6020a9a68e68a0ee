package main

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idem"
)

// TestRaceStorm sends STORM_OPS logical charges (200 here, 40 under -short;
// make soak sends 1000), each 1 to 5 times: some of the copies at once (a
// double click), the others as retries after the first answer, 64 workers
// in all. Then it
// checks, from the tables and the provider: one charge at the provider and
// one charge record per operation, every answer to a key equal to its first
// completed answer, and no record left in progress past its lease.
func TestRaceStorm(t *testing.T) {
	ops := 200
	if testing.Short() {
		ops = 40
	}
	if v, err := strconv.Atoi(os.Getenv("STORM_OPS")); err == nil && v > 0 {
		ops = v
	}
	f := newFixture(t, func(o *idem.Options) { o.Lease = 5 * time.Second })
	type send struct{ op, copy int }
	rng := rand.New(rand.NewPCG(7, 7))
	copies := make([]int, ops)
	var work []send
	for op := range ops {
		copies[op] = 1 + rng.IntN(5)
		for c := range copies[op] {
			work = append(work, send{op, c})
		}
	}
	rng.Shuffle(len(work), func(i, j int) { work[i], work[j] = work[j], work[i] })

	var mu sync.Mutex
	first := make([]string, ops) // the first completed answer's body, per operation
	statuses := map[int]int{}
	mismatch := 0
	next := make(chan send)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				amount := 100 + s.op
				pm := "pm_card_visa"
				if s.op%10 == 0 {
					pm = provider.CardDeclined // some operations are declines, stored as 402
				}
				body := `{"amount":` + strconv.Itoa(amount) + `,"currency":"eur","payment_method":"` + pm + `"}`
				key := "storm-" + strconv.Itoa(s.op)
				// A client that got 409 waits and sends the same request
				// again, as a client should, until it gets an answer.
				for try := 0; ; try++ {
					resp := f.call("POST", "/charges", "storm", key, body)
					if resp.StatusCode == 409 && try < 100 {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					mu.Lock()
					statuses[resp.StatusCode]++
					switch {
					case resp.StatusCode != 201 && resp.StatusCode != 402:
					case first[s.op] == "":
						first[s.op] = resp.Body
					case first[s.op] != resp.Body:
						mismatch++
					}
					mu.Unlock()
					break
				}
			}
		}()
	}
	for _, s := range work {
		next <- s
	}
	close(next)
	wg.Wait()
	t.Logf("%d operations, %d requests, answers %v", ops, len(work), statuses)

	if statuses[201]+statuses[402] != len(work) {
		t.Fatalf("answers %v: want every request answered 201 or 402 in the end", statuses)
	}
	if mismatch > 0 {
		t.Fatalf("%d answers differed from their key's first answer", mismatch)
	}
	effects := f.sim.Effects()
	perKey := map[string]int{}
	for _, e := range effects {
		perKey[e.IdempotencyKey]++
	}
	if len(effects) != ops || len(perKey) != ops {
		t.Fatalf("%d provider charges under %d keys for %d operations", len(effects), len(perKey), ops)
	}
	if n := f.charges(); n != ops || f.items() != 3*ops { // and the idempotency records and committed markers
		t.Fatalf("%d charge records, %d items for %d operations: want a record, a charge and a marker each", n, f.items(), ops)
	}
	out, err := f.raw.Scan(context.Background(), &dynamodb.ScanInput{
		TableName:                 aws.String(f.tables[0]),
		FilterExpression:          aws.String("#s = :p AND lease_until < :now"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "IN_PROGRESS"}, ":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 0 {
		t.Fatalf("%d records left in progress past their lease", out.Count)
	}
}
