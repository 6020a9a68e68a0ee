package functions_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// SECURITY.md says how long each kind of data is kept; each figure it gives
// is the template's. A figure that drifts from template.yaml (a queue kept
// longer than it says, backups it does not mention) fails here.
func TestSecurityMdRetentionIsTheTemplates(t *testing.T) {
	var doc struct {
		Parameters map[string]struct {
			Default any `yaml:"Default"`
		} `yaml:"Parameters"`
		Resources map[string]struct {
			Type       string         `yaml:"Type"`
			Properties map[string]any `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	path := rawTemplate(t, &doc)
	md, err := os.ReadFile(filepath.Join(filepath.Dir(path), "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	security := strings.Join(strings.Fields(string(md)), " ") // a phrase may wrap
	says := func(what string, figure int, format string) {
		t.Helper()
		phrase := fmt.Sprintf(format, figure)
		if !strings.Contains(security, phrase) {
			t.Errorf("SECURITY.md does not say %q: the template keeps %s that long", phrase, what)
		}
		re := regexp.MustCompile(strings.Replace(regexp.QuoteMeta(format), "%d", `(\d+)`, 1))
		for _, m := range re.FindAllStringSubmatch(security, -1) {
			if m[1] != fmt.Sprint(figure) {
				t.Errorf("SECURITY.md says %q; the template keeps %s %d", m[0], what, figure)
			}
		}
	}
	prop := func(id, name string) int {
		t.Helper()
		r, ok := doc.Resources[id]
		if !ok {
			t.Fatalf("no resource %s", id)
		}
		n, ok := r.Properties[name].(int)
		if !ok {
			t.Fatalf("%s has no %s of its own (the service's default would be a figure the template does not hold)", id, name)
		}
		return n
	}
	const day = 24 * 60 * 60
	says("order events in the queue (days)", prop("OrderEventsQueue", "MessageRetentionPeriod")/day, "%d days in the order-event queue")
	dlq := prop("OrderEventsDLQ", "MessageRetentionPeriod")
	if pipe := prop("OrderEventsPipeDLQ", "MessageRetentionPeriod"); pipe != dlq {
		t.Errorf("the dead-letter queues keep messages %d and %d seconds: SECURITY.md gives one figure", dlq, pipe)
	}
	says("dead letters (days)", dlq/day, "%d days in the dead-letter queues")
	pipe, _ := doc.Resources["OrderEventsPipe"].Properties["SourceParameters"].(map[string]any)
	stream, _ := pipe["DynamoDBStreamParameters"].(map[string]any)
	age, ok := stream["MaximumRecordAgeInSeconds"].(int)
	if !ok {
		t.Fatal("the pipe has no MaximumRecordAgeInSeconds")
	}
	says("a stream record the pipe cannot deliver (hours)", age/3600, "not delivered within %d hours")
	logs, ok := doc.Parameters["LogRetentionDays"].Default.(int)
	if !ok {
		t.Fatal("LogRetentionDays has no default")
	}
	says("logs (days)", logs, "%d days by default (`LogRetentionDays`)")
	recovery := -1
	for id, r := range doc.Resources {
		if r.Type != "AWS::DynamoDB::Table" {
			continue
		}
		pitr, _ := r.Properties["PointInTimeRecoverySpecification"].(map[string]any)
		days, ok := pitr["RecoveryPeriodInDays"].(int)
		if pitr["PointInTimeRecoveryEnabled"] != true || !ok {
			t.Fatalf("%s: point-in-time recovery %v, want it on with its RecoveryPeriodInDays", id, pitr)
		}
		if recovery >= 0 && days != recovery {
			t.Errorf("%s keeps backups %d days, another table %d: SECURITY.md gives one figure", id, days, recovery)
		}
		recovery = days
	}
	says("every table's point-in-time backups (days)", recovery, "restorable for %d days after it is deleted")
}
