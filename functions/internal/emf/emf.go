// Package emf writes the functions' idempotency outcomes as CloudWatch
// Embedded Metric Format lines: the metrics, their namespace and dimensions,
// which template.yaml's alarms name too.
package emf

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
)

// Namespace is the CloudWatch namespace of the functions' metrics;
// template.yaml's alarms name it too.
const Namespace = "Idem"

// The metrics each line carries, and their dimensions: every outcome is
// counted per function and outcome, and per outcome across the functions
// (which the alarms watch).
const (
	MetricCalls     = "Calls"     // Count: 1 per outcome
	MetricLeaseUsed = "LeaseUsed" // Milliseconds: only where a lease was held
	DimFunction     = "Function"
	DimOutcome      = "Outcome"
)

// Metrics is an idem.Metrics that writes each outcome as one line of CloudWatch
// Embedded Metric Format on w (the function's stdout): CloudWatch Logs
// extracts the metrics from the log group, with no agent and no extra call.
type Metrics struct {
	mu       sync.Mutex
	w        io.Writer
	function string
	// Now stamps each line (default time.Now).
	Now func() time.Time
}

// New writes function's metrics on w.
func New(w io.Writer, function string) *Metrics {
	return &Metrics{w: w, function: function, Now: time.Now}
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

type emfLine struct {
	AWS       emfMeta `json:"_aws"`
	Function  string  `json:"Function"`
	Outcome   string  `json:"Outcome"`
	Calls     int     `json:"Calls"`
	LeaseUsed *int64  `json:"LeaseUsed,omitempty"`
}

var emfDimensions = [][]string{{DimFunction, DimOutcome}, {DimOutcome}}

// Observe writes one line. An outcome that held no lease carries no
// LeaseUsed value, so that replays do not pull its statistics to zero.
func (e *Metrics) Observe(o idem.Outcome, leaseUsed time.Duration) {
	metrics := []emfMetric{{Name: MetricCalls, Unit: "Count"}}
	line := emfLine{Function: e.function, Outcome: string(o), Calls: 1}
	if leaseUsed > 0 {
		ms := leaseUsed.Milliseconds()
		line.LeaseUsed = &ms
		metrics = append(metrics, emfMetric{Name: MetricLeaseUsed, Unit: "Milliseconds"})
	}
	line.AWS = emfMeta{
		Timestamp:         e.Now().UnixMilli(),
		CloudWatchMetrics: []emfDirective{{Namespace: Namespace, Dimensions: emfDimensions, Metrics: metrics}},
	}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	b = append(b, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(b) // the function's log: a failed write has nowhere better to be reported, and the metric is never the answer
}
