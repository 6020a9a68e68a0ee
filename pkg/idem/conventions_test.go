package idem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// TestAMisconfiguredTableIsADefiniteFailure: a table that does not exist is
// a definite failure, ErrMisconfigured naming the table, logged with the
// table and the cause and observed as OutcomeFailed, on Do and DoAtomic
// alike (every door answers it as a 500 with no Retry-After: the doors'
// test of the same name).
func TestAMisconfiguredTableIsADefiniteFailure(t *testing.T) {
	for _, atomic := range []bool{false, true} {
		t.Run(fmt.Sprintf("atomic %v", atomic), func(t *testing.T) {
			var buf bytes.Buffer
			metrics := &recorder{}
			s, err := idem.New(idemtest.Client(t), "no-such-table", func(o *idem.Options) {
				o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
				o.Metrics = metrics
			})
			if err != nil {
				t.Fatal(err)
			}
			do := s.Do
			if atomic {
				do = s.DoAtomic
			}
			_, err = do(context.Background(), req("alice", "k1", `{}`), ok)
			if !errors.Is(err, idem.ErrMisconfigured) || !strings.Contains(err.Error(), "no-such-table") {
				t.Fatalf("err %v, want ErrMisconfigured naming the table", err)
			}
			if o, _ := metrics.last(); o != idem.OutcomeFailed {
				t.Fatalf("Metrics saw %q, want %q", o, idem.OutcomeFailed)
			}
			if !strings.Contains(buf.String(), "no-such-table") || !strings.Contains(buf.String(), "ResourceNotFoundException") || strings.Contains(buf.String(), "outcome unknown") {
				t.Fatalf("log %s: want a line naming the table and the cause, never an unknown outcome", buf.String())
			}
		})
	}
}
