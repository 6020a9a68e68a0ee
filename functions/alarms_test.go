package functions_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"

	"github.com/idemkeys/idem/functions/internal/emf"
	"github.com/idemkeys/idem/pkg/idem"
)

var required = map[string]any{"JwtIssuer": "https://issuer.example", "JwtAudience": []any{"aud"}}

func params(more map[string]any) map[string]any {
	p := map[string]any{}
	for k, v := range required {
		p[k] = v
	}
	for k, v := range more {
		p[k] = v
	}
	return p
}

// Every alarm says what it means, and notifies the topic exactly when one
// is given.
func TestAlarmsNotifyTheTopicOnlyWhenGiven(t *testing.T) {
	const topic = "arn:aws:sns:eu-west-1:123456789012:oncall"
	for _, given := range []bool{false, true} {
		p := params(nil)
		if given {
			p["AlarmTopicArn"] = topic
		}
		alarms := parse(t, p).GetAllCloudWatchAlarmResources()
		if len(alarms) < 6 {
			t.Fatalf("%d alarms, want the two dead-letter queues, fenced, in progress, 5xx, function errors", len(alarms))
		}
		for id, a := range alarms {
			if a.AlarmDescription == nil || *a.AlarmDescription == "" {
				t.Errorf("%s: no AlarmDescription", id)
			}
			want := "[]"
			if given {
				want = "[" + topic + "]"
			}
			if got := fmt.Sprint(a.AlarmActions); got != want || fmt.Sprint(a.OKActions) != want {
				t.Errorf("topic given %v: %s notifies %s and %v, want %s", given, id, got, a.OKActions, want)
			}
		}
	}
}

// The alarms on the functions' own metrics watch what the code emits.
func TestOutcomeAlarmsWatchTheEmittedMetrics(t *testing.T) {
	alarms := parse(t, params(map[string]any{"InProgressAlarmThreshold": 7})).GetAllCloudWatchAlarmResources()
	for id, want := range map[string]struct {
		outcome   idem.Outcome
		threshold float64
	}{"FencedCommitAlarm": {idem.OutcomeFenced, 0}, "InProgressAlarm": {idem.OutcomeInProgress, 7}} {
		a, ok := alarms[id]
		if !ok {
			t.Fatalf("no %s", id)
		}
		if *a.Namespace != emf.Namespace || *a.MetricName != emf.MetricCalls || !dimension(a, emf.DimOutcome, string(want.outcome)) {
			t.Errorf("%s watches %s/%s %v, the functions emit %s/%s with %s=%s", id, *a.Namespace, *a.MetricName, a.Dimensions, emf.Namespace, emf.MetricCalls, emf.DimOutcome, want.outcome)
		}
		if a.Threshold == nil || *a.Threshold != want.threshold || a.ComparisonOperator != "GreaterThanThreshold" {
			t.Errorf("%s: threshold %v %s, want > %v", id, a.Threshold, a.ComparisonOperator, want.threshold)
		}
	}
}

func dimension(a *cloudwatch.Alarm, name, value string) bool {
	for _, d := range a.Dimensions {
		if d.Name == name && d.Value == value {
			return true
		}
	}
	return false
}

// Each function logs to a log group of the stack, named without the
// function, so the group exists before the function first runs.
func TestEveryFunctionLogsToAStackLogGroup(t *testing.T) {
	var doc struct {
		Resources map[string]struct {
			Type       string         `yaml:"Type"`
			Properties map[string]any `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	rawTemplate(t, &doc)
	for id, r := range doc.Resources {
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		cfg, _ := r.Properties["LoggingConfig"].(map[string]any)
		group, _ := cfg["LogGroup"].(string) // !Ref reads as the logical id
		g, ok := doc.Resources[group]
		if !ok || g.Type != "AWS::Logs::LogGroup" {
			t.Errorf("%s: LoggingConfig.LogGroup %v is no log group of the stack", id, cfg["LogGroup"])
			continue
		}
		name := fmt.Sprint(g.Properties["LogGroupName"])
		if strings.Contains(name, "${"+id+"}") || g.Properties["RetentionInDays"] == nil {
			t.Errorf("%s: log group %s named %q from the function, or without retention", id, group, name)
		}
	}
}
