package idem_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// TestManyInvocationsInOneProcess holds one Store, its cache and its
// Metrics to Lambda Managed Instances, where one process runs up to
// AWS_LAMBDA_MAX_CONCURRENCY invocations at once: 64 concurrent invocations
// of one handler, 16 keys each sent 4 times, on Do and DoAtomic. Each key
// takes effect once (one business item, the work run once on Do), every
// answer to a key is its first answer, and every call is observed. Run it
// under -race.
func TestManyInvocationsInOneProcess(t *testing.T) {
	for _, doAtomic := range []bool{false, true} {
		t.Run(fmt.Sprintf("atomic %v", doAtomic), func(t *testing.T) {
			metrics := &recorder{}
			f := newFixture(t, withCache(64, 1<<20), func(o *idem.Options) { o.Metrics = metrics })
			var runs sync.Map // key → *atomic.Int32
			h := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
				n, _ := runs.LoadOrStore(req.Key, new(atomic.Int32))
				id := fmt.Sprintf("%s-%d", req.Key, n.(*atomic.Int32).Add(1))
				tx.Add(f.OrderPut("alice", req.Key, id), nil)
				return idem.Response{StatusCode: 201, Body: []byte(id)}, nil
			}, func(o *idemlambda.Options[events.APIGatewayV2HTTPRequest]) { o.Atomic = doAtomic })
			const keys, copies = 16, 4
			bodies := make([][]string, keys)
			var mu sync.Mutex
			race(keys*copies, func(i int) {
				key := fmt.Sprintf("k%02d", i%keys)
				r, _ := h(context.Background(), testbed.APIRequest("alice", map[string]string{"idempotency-key": key}, `{}`))
				if r.StatusCode == 409 {
					return // in progress: the client's retry comes later
				}
				mu.Lock()
				defer mu.Unlock()
				bodies[i%keys] = append(bodies[i%keys], fmt.Sprint(r.StatusCode, " ", r.Body))
			})
			for k := range keys {
				key := fmt.Sprintf("k%02d", k)
				// The retries of the 409s, one each after the storm.
				r, _ := h(context.Background(), testbed.APIRequest("alice", map[string]string{"idempotency-key": key}, `{}`))
				stored := fmt.Sprint(r.StatusCode, " ", r.Body)
				for _, b := range bodies[k] {
					if b != stored {
						t.Errorf("%s answered %q and %q", key, b, stored)
					}
				}
				if n, _ := runs.Load(key); !doAtomic && n.(*atomic.Int32).Load() != 1 {
					t.Errorf("%s: the work ran %d times on Do, want 1", key, n.(*atomic.Int32).Load())
				}
				if f.Order("alice", key) == nil {
					t.Errorf("%s: no business item", key)
				}
			}
			metrics.mu.Lock()
			defer metrics.mu.Unlock()
			if got := len(metrics.seen); got != keys*copies+keys {
				t.Fatalf("Metrics saw %d calls, want %d", got, keys*copies+keys)
			}
		})
	}
}
