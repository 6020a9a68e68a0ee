package idem_test

import (
	"context"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// TestTheCacheKeepsScopesApart: the execution environment's cache answers
// for (scope, key), as the table does, never for the key alone: bob's k1
// under alice's body and carol's under another each run their own work,
// never get alice's stored response nor a 422; the same after a Delete
// and after the records expired (testbed.ScopePlan). On Do and DoAtomic.
func TestTheCacheKeepsScopesApart(t *testing.T) {
	for _, path := range []string{"Do", "DoAtomic"} {
		t.Run(path, func(t *testing.T) {
			f := newFixture(t, withCache(10, 1<<16))
			do := f.Store.Do
			if path == "DoAtomic" {
				do = f.Store.DoAtomic
			}
			var plan testbed.ScopePlan
			plan.Run(f.Fixture, func(scope, body string) (string, error) {
				res, err := do(context.Background(), req(scope, "k1", body), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
					return idem.Response{StatusCode: 201, Body: []byte(plan.Work(scope))}, nil
				})
				return string(res.Response.Body), err
			})
		})
	}
}
