package emf_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/functions/internal/emf"
	"github.com/idemkeys/idem/pkg/idem"
)

func TestEMFLinesAreEmbeddedMetricFormat(t *testing.T) {
	var out bytes.Buffer
	e := emf.New(&out, "charge")
	e.Now = func() time.Time { return time.UnixMilli(1700000000123) }
	e.Observe(idem.OutcomeExecuted, 1500*time.Millisecond)
	e.Observe(idem.OutcomeReplayed, 0)
	docs := apitest.EMF(t, out.Bytes())
	if len(docs) != 2 {
		t.Fatalf("%d lines, want 2", len(docs))
	}
	if d := docs[0]; d["Function"] != "charge" || d["Outcome"] != "executed" || d["Calls"] != 1.0 || d["LeaseUsed"] != 1500.0 {
		t.Fatalf("executed line: %v", d)
	}
	if ts := docs[0]["_aws"].(map[string]any)["Timestamp"]; ts != 1700000000123.0 {
		t.Fatalf("Timestamp %v", ts)
	}
	if d := docs[1]; d["Outcome"] != "replayed" || d["LeaseUsed"] != nil {
		t.Fatalf("a replay held no lease and must carry no LeaseUsed: %v", d)
	}
}
