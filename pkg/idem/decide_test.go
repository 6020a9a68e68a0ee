package idem

import (
	"testing"
	"time"
)

// TestNextFollowsTheModel holds the pure decision to the model's "decide:"
// (model/idem.pml), row for row, without DynamoDB.
func TestNextFollowsTheModel(t *testing.T) {
	now := time.Now()
	live, lapsed, gone := now.Add(time.Second).UnixMilli(), int64(0), now.Add(-time.Second).UnixMilli()
	fresh, old := now.Add(time.Hour).Unix(), now.Add(-time.Second).Unix()
	rec := func(fp, status string, leaseUntil, expiresAt int64) *record {
		return &record{Fingerprint: fp, Status: status, LeaseUntil: leaseUntil, ExpiresAt: expiresAt}
	}
	cases := []struct {
		name string
		seen *record
		want step
	}{
		// model: !saw || s_expired -> claim
		{"nothing seen", nil, stepClaim},
		{"expired, completed", rec("A", statusCompleted, gone, old), stepClaim},
		{"expired, another request's", rec("B", statusInProgress, live, old), stepClaim},
		// model: s_fp != myfp -> MISMATCH, in any state
		{"another request's, in progress", rec("B", statusInProgress, live, fresh), stepMismatch},
		{"another request's, lapsed", rec("B", statusInProgress, lapsed, fresh), stepMismatch},
		{"another request's, completed", rec("B", statusCompleted, gone, fresh), stepMismatch},
		// model: s_status == DONE -> REPLAYED
		{"completed", rec("A", statusCompleted, live, fresh), stepReplay},
		// model: s_live -> CONFLICT (409, or wait)
		{"in progress, lease live", rec("A", statusInProgress, live, fresh), stepBusy},
		// model: else -> takeover
		{"in progress, lease over", rec("A", statusInProgress, gone, fresh), stepTakeover},
		{"in progress, lapsed after an error", rec("A", statusInProgress, lapsed, fresh), stepTakeover},
	}
	for _, tc := range cases {
		if got := next(tc.seen, "A", now); got != tc.want {
			t.Errorf("%s: next = %d, want %d", tc.name, got, tc.want)
		}
	}
}
