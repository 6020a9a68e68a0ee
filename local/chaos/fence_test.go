package chaos

import (
	"testing"
	"time"
)

// TestACommitIsFencedOnlyWhenItsLeaseWasTheRecords holds the checker's rule
// for the table's history: a commit is its holder's when the record it
// replaced was in progress under the same token, or was completed and
// either kept its token (the campaign's own expiry) or had expired.
func TestACommitIsFencedOnlyWhenItsLeaseWasTheRecords(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name string
		c    commit
		want bool
	}{
		{"made completed at once (DoAtomic's first commit)", commit{at: at, newToken: "a"}, true},
		{"its own lease, in progress", commit{at: at, hadOld: true, oldStatus: statusInProgress, oldToken: "a", newToken: "a"}, true},
		{"over a takeover's lease", commit{at: at, hadOld: true, oldStatus: statusInProgress, oldToken: "b", newToken: "a", oldExpires: at.Unix() + 86400}, false},
		{"over its own lapse", commit{at: at, hadOld: true, oldStatus: statusInProgress, oldToken: "a.lapsed", newToken: "a", oldExpires: at.Unix() + 86400}, false},
		{"over another's record in progress, expired", commit{at: at, hadOld: true, oldStatus: statusInProgress, oldToken: "b", newToken: "a", oldExpires: at.Unix() - 60}, true},
		{"the campaign's expiry of a completed record", commit{at: at, hadOld: true, oldStatus: statusCompleted, wasCompleted: true, oldToken: "a", newToken: "a", oldExpires: at.Unix() + 60}, true},
		{"over another's completed record, live", commit{at: at, hadOld: true, oldStatus: statusCompleted, wasCompleted: true, oldToken: "b", newToken: "a", oldExpires: at.Unix() + 86400}, false},
		{"over another's completed record, expired", commit{at: at, hadOld: true, oldStatus: statusCompleted, wasCompleted: true, oldToken: "b", newToken: "a", oldExpires: at.Unix() - 60}, true},
		{"over another's completed record, expired within the stream's minute", commit{at: at, hadOld: true, oldStatus: statusCompleted, wasCompleted: true, oldToken: "b", newToken: "a", oldExpires: at.Unix() + 30}, true},
	} {
		if got := tc.c.fenced(); got != tc.want {
			t.Errorf("%s: fenced() = %v, want %v (%s)", tc.name, got, tc.want, tc.c)
		}
	}
}
