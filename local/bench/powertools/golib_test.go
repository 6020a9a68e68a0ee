package powertools_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

// goLib is pkg/idem's side, through Store.Do or Store.DoAtomic, with the
// same handler as harness.cjs: it may put one order (scope: the key), and
// answers 201 with the order id.
type goLib struct {
	store       *idem.Store
	atomic      bool
	ordersTable string
	records     string
	raw         *dynamodb.Client
	client      *dynamodb.Client // through the counter
	executions  atomic.Int64
}

func (g *goLib) name() string {
	if g.atomic {
		return "pkg/idem DoAtomic"
	}
	return "pkg/idem Do"
}

func (g *goLib) orders() string { return g.ordersTable }

func request(key, b string) idem.Request {
	fp, err := idem.Fingerprint("POST", "/orders", []byte(b), true)
	if err != nil {
		panic(err)
	}
	return idem.Request{Scope: "bench", Key: key, Fingerprint: fp}
}

// work is the handler; hold, if set, runs in its first execution only.
func (g *goLib) work(key string, write bool, hold func()) idem.Work {
	var held atomic.Bool
	return func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		g.executions.Add(1)
		id := newOrderID()
		if hold != nil && !held.Swap(true) {
			hold()
		}
		if write {
			tx.Add(types.TransactWriteItem{Put: &types.Put{
				TableName:           aws.String(g.ordersTable),
				Item:                map[string]types.AttributeValue{"scope": &types.AttributeValueMemberS{Value: key}, "order_id": &types.AttributeValueMemberS{Value: id}},
				ConditionExpression: aws.String("attribute_not_exists(order_id)"),
			}}, nil)
		}
		return idem.Response{StatusCode: 201, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"id":"` + id + `","status":"created"}`)}, nil
	}
}

func (g *goLib) do(s *idem.Store, key, b string, write bool, hold func()) string {
	req := request(key, b)
	var res idem.Result
	var err error
	if g.atomic {
		res, err = s.DoAtomic(context.Background(), req, g.work(key, write, hold))
	} else {
		res, err = s.Do(context.Background(), req, g.work(key, write, hold))
	}
	return answer(res, err)
}

// answer names an outcome as harness.cjs does: "201 ord_…", or the error.
func answer(res idem.Result, err error) string {
	switch {
	case err == nil:
		return fmt.Sprintf("%d %s", res.Response.StatusCode, orderID(res.Response.Body))
	case errors.Is(err, idem.ErrInProgress):
		return "ErrInProgress"
	case errors.Is(err, idem.ErrFingerprintMismatch):
		return "ErrFingerprintMismatch"
	case errors.Is(err, idem.ErrLeaseLost):
		return "ErrLeaseLost"
	default:
		return "error:" + err.Error()
	}
}

func (g *goLib) seq(keys []string, b string, write bool) (time.Duration, map[string]int, int) {
	before := g.executions.Load()
	answers := make([]string, 0, len(keys))
	t0 := time.Now()
	for _, key := range keys {
		answers = append(answers, g.do(g.store, key, b, write, nil))
	}
	return time.Since(t0), tally(answers), int(g.executions.Load() - before)
}

func (g *goLib) race(key string, n int) (map[string]int, int) {
	before := g.executions.Load()
	answers := make([]string, n)
	start := make(chan struct{})
	done := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			answers[i] = g.do(g.store, key, body, true, nil)
			done <- struct{}{}
		}()
	}
	close(start)
	for range n {
		<-done
	}
	return tally(answers), int(g.executions.Load() - before)
}

func (g *goLib) other(key string) []otherAnswer {
	first := g.do(g.store, key, body, false, nil)
	return []otherAnswer{{g.name(), first, g.do(g.store, key, otherBody, false, nil)}}
}

// slow runs the holder with a lease of lease (Options.Lease: a Lambda has
// as long as its remaining time), past it; a retry from another store takes
// the key over and completes; then the holder commits, or tries to.
func (g *goLib) slow(key string) slowResult {
	holder, err1 := idem.New(g.client, g.records, func(o *idem.Options) { o.Lease = lease })
	retry, err2 := idem.New(g.client, g.records, func(o *idem.Options) { o.Lease = lease })
	if err := errors.Join(err1, err2); err != nil {
		return slowResult{holder: "error:" + err.Error()}
	}
	var r slowResult
	before := g.executions.Load()
	r.holder = g.do(holder, key, body, true, func() {
		time.Sleep(lease + 200*time.Millisecond)
		r.retry = g.do(retry, key, body, true, nil)
	})
	r.replay = g.do(retry, key, body, true, nil)
	r.executions = int(g.executions.Load() - before)
	return r
}
