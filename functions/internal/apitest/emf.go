package apitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/idemkeys/idem/functions/internal/emf"
)

// emfDoc is what CloudWatch reads from a line: the directive, and the
// members it points at.
type emfDoc struct {
	AWS struct {
		Timestamp         *int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
	rest map[string]any
}

// EMF parses each line of out as an Embedded Metric Format document
// and checks what the specification requires of it: a root _aws with a
// Timestamp and directives, each dimension a string member of the root and
// each metric a number member. It returns the root members of each line.
func EMF(t testing.TB, out []byte) []map[string]any {
	t.Helper()
	var docs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var d emfDoc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("not JSON: %s", sc.Bytes())
		}
		if err := json.Unmarshal(sc.Bytes(), &d.rest); err != nil {
			t.Fatal(err)
		}
		if d.AWS.Timestamp == nil || len(d.AWS.CloudWatchMetrics) == 0 {
			t.Fatalf("no _aws.Timestamp or CloudWatchMetrics: %s", sc.Bytes())
		}
		for _, dir := range d.AWS.CloudWatchMetrics {
			if dir.Namespace != emf.Namespace || len(dir.Metrics) == 0 {
				t.Fatalf("directive %+v", dir)
			}
			for _, set := range dir.Dimensions {
				for _, dim := range set {
					if _, ok := d.rest[dim].(string); !ok {
						t.Fatalf("dimension %s is not a string member: %s", dim, sc.Bytes())
					}
				}
			}
			for _, m := range dir.Metrics {
				if _, ok := d.rest[m.Name].(float64); !ok {
					t.Fatalf("metric %s is not a number member: %s", m.Name, sc.Bytes())
				}
			}
		}
		docs = append(docs, d.rest)
	}
	return docs
}
