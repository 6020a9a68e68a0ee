package door_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// The cache serves every front door: a replay from it is the stored answer
// (marked replayed by an HTTP door) and another request under the key its
// 422 (Function's ErrFingerprintMismatch), neither with a DynamoDB call.
func TestCacheBehindEveryDoor(t *testing.T) {
	for _, d := range doorRows() {
		t.Run(d.name, func(t *testing.T) {
			f := newFixture(t, func(o *idem.Options) { o.Cache = idem.CacheOptions{MaxEntries: 10, MaxBytes: 1 << 16} })
			var runs atomic.Int32
			call := d.make(f.Store, func(ctx context.Context, scope, key string, body []byte) (int, string) {
				return 201, "made " + strconv.Itoa(int(runs.Add(1)))
			})
			if first, err := call(k1); err != nil || first.status != 201 || first.body != "made 1" {
				t.Fatalf("first = %+v %v", first, err)
			}
			f.DB.Reset()
			again, err := call(k1)
			if err != nil || again.status != 201 || again.body != "made 1" || (!d.fn && again.header[idemlambda.HeaderReplayed] != "true") || f.DB.Total() != 0 {
				t.Fatalf("cached replay = %+v %v with %v DynamoDB calls, want the first answer and none", again, err, f.DB.Calls())
			}
			other, err := call(doorCall{k1.scope, k1.keys, `{"a":2}`})
			if d.fn && !errors.Is(err, idem.ErrFingerprintMismatch) {
				t.Fatalf("another request under a cached key = %v, want ErrFingerprintMismatch", err)
			}
			if !d.fn {
				checkProblem(t, other.status, other.header["Content-Type"], []byte(other.body))
				if other.status != 422 || !strings.Contains(other.body, `"code":"idempotency_key_reused"`) {
					t.Fatalf("another request under a cached key = %+v, want 422", other)
				}
			}
			if f.DB.Total() != 0 || runs.Load() != 1 {
				t.Fatalf("the cached 422 cost %v DynamoDB calls and the handler ran %d times, want none and once", f.DB.Calls(), runs.Load())
			}
		})
	}
}

// TestTheCacheKeepsScopesApartBehindEveryDoor: behind every door, the
// cache answers for the caller's scope and key, never for the key alone:
// bob's k1 under alice's body and carol's under another run their own
// handler, never get alice's stored answer nor a 422; the same after a
// Delete and after the records expired (testbed.ScopePlan).
func TestTheCacheKeepsScopesApartBehindEveryDoor(t *testing.T) {
	for _, d := range doorRows() {
		t.Run(d.name, func(t *testing.T) {
			f := newFixture(t, func(o *idem.Options) { o.Cache = idem.CacheOptions{MaxEntries: 10, MaxBytes: 1 << 16} })
			var plan testbed.ScopePlan
			call := d.make(f.Store, func(ctx context.Context, scope, key string, body []byte) (int, string) {
				return 201, plan.Work(scope)
			})
			plan.Run(f, func(scope, body string) (string, error) {
				a, err := call(doorCall{scope, []string{"k1"}, body})
				if err == nil && a.status != 201 {
					err = fmt.Errorf("answered %d %s", a.status, a.body)
				}
				return a.body, err
			})
		})
	}
}
