package functions_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
)

// translate is the SAM translator's script (aws-sam-translator, which
// cfn-lint uses too): the template as CloudFormation deploys it, after the
// transform, as JSON. CodeUri is set to an S3 URI, as cfn-lint does, since
// the translator accepts no local path.
const translate = `
import json, os, sys
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
from cfnlint.decode import decode
from samtranslator.translator.transform import transform
class NoManagedPolicies:
    def load(self): return {}
tpl, matches = decode(sys.argv[1])
if matches: sys.exit(str(matches))
fn = tpl.get("Globals", {}).get("Function", {})
if "CodeUri" in fn: fn["CodeUri"] = "s3://bucket/code.zip"
for r in tpl["Resources"].values():
    if r.get("Type") == "AWS::Serverless::Function" and "CodeUri" in r.get("Properties", {}):
        r["Properties"]["CodeUri"] = "s3://bucket/code.zip"
json.dump(transform(tpl, {}, NoManagedPolicies()), sys.stdout, default=str)
`

type resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// transformed is template.yaml after SAM's transform (TRANSFORM_TEMPLATE
// names another template, to show these tests red on an older one), made
// once per test binary: each test reads it, none changes it.
func transformed(t *testing.T) map[string]resource {
	t.Helper()
	path, _ := load(t)
	if p := os.Getenv("TRANSFORM_TEMPLATE"); p != "" {
		path = p
	}
	transforms.Lock()
	defer transforms.Unlock()
	tr, ok := transforms.byPath[path]
	if !ok {
		tr = transform(path)
		transforms.byPath[path] = tr
	}
	if tr.skip != "" {
		t.Skip(tr.skip)
	}
	if tr.err != nil {
		t.Fatal(tr.err)
	}
	return tr.resources
}

// transforms are the templates transformed so far, by path.
var transforms = struct {
	sync.Mutex
	byPath map[string]*transformation
}{byPath: map[string]*transformation{}}

// transformation is one template after SAM's transform, or why there is
// none: the translator is not installed (skip), or it refused the template.
type transformation struct {
	resources map[string]resource
	skip      string
	err       error
}

func transform(path string) *transformation {
	if err := exec.Command("python3", "-c", "import samtranslator, cfnlint").Run(); err != nil {
		return &transformation{skip: fmt.Sprint("aws-sam-translator and cfn-lint are not installed for python3: ", err)}
	}
	out, err := exec.Command("python3", "-c", translate, path).Output() //nolint:gosec // G702: this test's own script, on the template path the developer named
	if err != nil {
		return &transformation{err: fmt.Errorf("SAM transform: %w %s", err, exitStderr(err))}
	}
	var doc struct {
		Resources map[string]resource `json:"Resources"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return &transformation{err: err}
	}
	return &transformation{resources: doc.Resources}
}

func exitStderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// statements are the statements of a role's inline policies.
func statements(role resource) []map[string]any {
	var out []map[string]any
	policies, _ := role.Properties["Policies"].([]any)
	for _, p := range policies {
		doc, _ := p.(map[string]any)["PolicyDocument"].(map[string]any)
		sts, _ := doc["Statement"].([]any)
		for _, st := range sts {
			if m, ok := st.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func list(v any) []string {
	switch v := v.(type) {
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, list(x)...)
		}
		return out
	case nil:
		return nil
	default:
		b, _ := json.Marshal(v)
		if s, ok := v.(string); ok {
			return []string{s}
		}
		return []string{string(b)}
	}
}

// subOf reads {"Fn::Sub": "..."} as its string.
func subOf(v any) string {
	if m, ok := v.(map[string]any); ok {
		if s, ok := m["Fn::Sub"].(string); ok {
			return s
		}
	}
	return fmt.Sprint(v)
}

// As deployed, every function's role may write only its own log group (no
// AWSLambdaBasicExecutionRole, whose logs:* on * lets a function forge log
// lines and EMF metrics anywhere), and no role grants logs on a wildcard.
func TestEveryRoleMayWriteOnlyItsOwnLogGroup(t *testing.T) {
	res := transformed(t)
	fns := 0
	for id, fn := range res {
		if fn.Type != "AWS::Lambda::Function" {
			continue
		}
		fns++
		roleRef, _ := fn.Properties["Role"].(map[string]any)["Fn::GetAtt"].([]any)
		if len(roleRef) != 2 {
			t.Errorf("%s: role %v is no role of the stack", id, fn.Properties["Role"])
			continue
		}
		role := res[fmt.Sprint(roleRef[0])]
		if arns := role.Properties["ManagedPolicyArns"]; arns != nil {
			t.Errorf("%s: role %s has managed policies %v", id, roleRef[0], arns)
		}
		cfg, _ := fn.Properties["LoggingConfig"].(map[string]any)
		groupID, _ := cfg["LogGroup"].(map[string]any)["Ref"].(string)
		group, ok := res[groupID]
		if !ok {
			t.Errorf("%s: LoggingConfig %v is no log group of the stack", id, cfg)
			continue
		}
		own := "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:" + subOf(group.Properties["LogGroupName"]) + ":*"
		wrote := false
		for _, st := range statements(role) {
			actions := list(st["Action"])
			if !slices.ContainsFunc(actions, func(a string) bool { return strings.HasPrefix(a, "logs:") }) {
				continue
			}
			wrote = true
			slices.Sort(actions)
			if !slices.Equal(actions, []string{"logs:CreateLogStream", "logs:PutLogEvents"}) {
				t.Errorf("%s: logs actions %v, want only CreateLogStream and PutLogEvents", id, actions)
			}
			if subOf(st["Resource"]) != own {
				t.Errorf("%s: logs on %v, want only its own group %s", id, st["Resource"], own)
			}
		}
		if !wrote {
			t.Errorf("%s: its role may not write its own log group", id)
		}
	}
	if fns != 3 {
		t.Fatalf("%d functions after the transform, want 3", fns)
	}
	for id, r := range res {
		if r.Type != "AWS::IAM::Role" {
			continue
		}
		for _, st := range statements(r) {
			for _, a := range list(st["Action"]) {
				if strings.HasPrefix(a, "logs:") && slices.ContainsFunc(list(st["Resource"]), func(s string) bool { return s == "*" }) {
					t.Errorf("%s: %s on *", id, a)
				}
			}
		}
	}
}

// As deployed, the charge's role deletes nothing of the charge's: no
// DeleteItem on ChargesTable, where a charge record stays, nor on
// AttemptsTable, where a committed operation's marker keeps its
// generation.
func TestTheChargeRoleCannotDeleteACharge(t *testing.T) {
	res := transformed(t)
	ref, _ := res["ChargeFunction"].Properties["Role"].(map[string]any)["Fn::GetAtt"].([]any)
	if len(ref) != 2 {
		t.Fatal("ChargeFunction has no role of the stack after the transform")
	}
	role := res[fmt.Sprint(ref[0])]
	var markers bool
	for _, st := range statements(role) {
		resources := fmt.Sprint(st["Resource"])
		actions := list(st["Action"])
		for _, table := range []string{"ChargesTable", "AttemptsTable"} {
			if strings.Contains(resources, table) && slices.ContainsFunc(actions, func(a string) bool { return a == "dynamodb:DeleteItem" || strings.HasSuffix(a, "*") }) {
				t.Errorf("the charge role may delete from %s: %v on %s", table, actions, resources)
			}
		}
		markers = markers || strings.Contains(resources, "AttemptsTable") && slices.Contains(actions, "dynamodb:PutItem")
	}
	if !markers {
		t.Error("the charge role may not write its attempt markers to AttemptsTable")
	}
}

// Every table refuses DeleteTable (DeletionPolicy: Retain covers only a
// stack deletion).
func TestEveryTableRefusesDeletion(t *testing.T) {
	res := transformed(t)
	n := 0
	for id, r := range res {
		if r.Type != "AWS::DynamoDB::Table" {
			continue
		}
		n++
		if r.Properties["DeletionProtectionEnabled"] != true {
			t.Errorf("%s: DeletionProtectionEnabled %v, want true", id, r.Properties["DeletionProtectionEnabled"])
		}
	}
	if n == 0 {
		t.Fatal("no tables")
	}
}

// The order events queue keeps a message at least as long as the
// consumer's exactly-once window (orderstats.MaxAge: idem.MaxTTL less a
// day), and an alarm watches the age of its oldest message.
func TestOrderEventsOutliveTheWindowAndTheirAgeIsWatched(t *testing.T) {
	res := transformed(t)
	window := idem.MaxTTL - 24*time.Hour
	q := res["OrderEventsQueue"]
	retention, _ := q.Properties["MessageRetentionPeriod"].(float64)
	if time.Duration(retention)*time.Second < window {
		t.Errorf("OrderEventsQueue keeps messages %vs, shorter than the %v window", q.Properties["MessageRetentionPeriod"], window)
	}
	watched := false
	for _, r := range res {
		if r.Type != "AWS::CloudWatch::Alarm" || r.Properties["MetricName"] != "ApproximateAgeOfOldestMessage" {
			continue
		}
		if strings.Contains(fmt.Sprint(r.Properties["Dimensions"]), "OrderEventsQueue QueueName") {
			watched = true
		}
	}
	if !watched {
		t.Error("no alarm on OrderEventsQueue's ApproximateAgeOfOldestMessage")
	}
}

// A function trusts the claims in its event as API Gateway's (SECURITY.md,
// "A direct invocation"): so, as deployed, only the HTTP API may invoke the
// HTTP functions, route by route, and no function has a URL.
func TestOnlyTheHTTPAPIMayInvokeTheFunctions(t *testing.T) {
	res := transformed(t)
	n := 0
	for id, r := range res {
		switch r.Type {
		case "AWS::Lambda::Url":
			t.Errorf("%s: a function URL, which no authorizer guards", id)
		case "AWS::Lambda::Permission":
			n++
			source, _ := json.Marshal(r.Properties["SourceArn"])
			if r.Properties["Principal"] != "apigateway.amazonaws.com" || !strings.Contains(string(source), `{"Ref":"HttpApi"}`) {
				t.Errorf("%s: %v may invoke, from %s; want only the HTTP API", id, r.Properties["Principal"], source)
			}
		}
	}
	if n == 0 {
		t.Fatal("no invoke permissions: the HTTP API could not call the functions")
	}
}

// The HTTP API's stage writes one access log line per request, to a log
// group of the stack with a retention: the request id, the route, the
// status, the latency and the caller's scope, and nothing of what the
// request carries (no header, so no key or token; no body, path or query).
func TestTheHTTPAPILogsEveryRequestWithoutWhatItCarries(t *testing.T) {
	res := transformed(t)
	var stages int
	for id, r := range res {
		if r.Type != "AWS::ApiGatewayV2::Stage" {
			continue
		}
		stages++
		als, _ := r.Properties["AccessLogSettings"].(map[string]any)
		arn, _ := als["DestinationArn"].(map[string]any)
		dest, _ := arn["Fn::GetAtt"].([]any)
		if len(dest) != 2 || res[fmt.Sprint(dest[0])].Type != "AWS::Logs::LogGroup" || res[fmt.Sprint(dest[0])].Properties["RetentionInDays"] == nil {
			t.Errorf("%s: access logs to %v, want a log group of the stack with a retention", id, als["DestinationArn"])
			continue
		}
		format := strings.ReplaceAll(subOf(als["Format"]), "${ScopeClaim}", "sub")
		var fields map[string]string
		if err := json.Unmarshal([]byte(format), &fields); err != nil {
			t.Errorf("%s: access log format %q is not one JSON object: %v", id, format, err)
			continue
		}
		var values []string
		for _, v := range fields {
			values = append(values, v)
		}
		for _, want := range []string{"$context.requestId", "$context.routeKey", "$context.status", "$context.responseLatency", "$context.authorizer.claims.sub"} {
			if !slices.Contains(values, want) {
				t.Errorf("%s: access log without %s", id, want)
			}
		}
		for _, v := range values {
			for _, never := range []string{"$request", "header", "body", "identity", "path", "querystring", "authorization"} {
				if strings.Contains(strings.ToLower(v), strings.ToLower(never)) {
					t.Errorf("%s: access log field %s reads what the request carries (%s)", id, v, never)
				}
			}
		}
	}
	if stages != 1 {
		t.Fatalf("%d HTTP API stages, want 1", stages)
	}
}

// As deployed, every function is actively traced, its role may put trace
// segments (Lambda sends the invocation's with it, the ADOT collector's
// X-Ray exporter the function's spans) and nothing else of X-Ray's, and
// the collector layer and the functions' OTLP endpoint come together, both
// only when AdotCollectorLayerArn is set.
func TestEveryFunctionIsTracedAndMaySendItsSegments(t *testing.T) {
	res := transformed(t)
	fns := 0
	for id, fn := range res {
		if fn.Type != "AWS::Lambda::Function" {
			continue
		}
		fns++
		if mode := fmt.Sprint(fn.Properties["TracingConfig"]); mode != "map[Mode:Active]" {
			t.Errorf("%s: TracingConfig %s, want Active", id, mode)
		}
		layers, _ := json.Marshal(fn.Properties["Layers"])
		if string(layers) != `[{"Fn::If":["HasAdotCollector",{"Ref":"AdotCollectorLayerArn"},{"Ref":"AWS::NoValue"}]}]` {
			t.Errorf("%s: Layers %s, want the collector's when AdotCollectorLayerArn is set", id, layers)
		}
		env, _ := fn.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		endpoint, _ := json.Marshal(env["OTEL_EXPORTER_OTLP_ENDPOINT"])
		if string(endpoint) != `{"Fn::If":["HasAdotCollector","http://localhost:4318",""]}` {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT %s, want the collector's receiver when it is added, else empty", id, endpoint)
		}
		roleRef, _ := fn.Properties["Role"].(map[string]any)["Fn::GetAtt"].([]any)
		if len(roleRef) != 2 {
			t.Errorf("%s: role %v is no role of the stack", id, fn.Properties["Role"])
			continue
		}
		var xray []string
		for _, st := range statements(res[fmt.Sprint(roleRef[0])]) {
			if actions := list(st["Action"]); slices.ContainsFunc(actions, func(a string) bool { return strings.HasPrefix(a, "xray:") }) {
				xray = append(xray, fmt.Sprint(actions, list(st["Resource"])))
			}
		}
		if !slices.Equal(xray, []string{"[xray:PutTraceSegments xray:PutTelemetryRecords] [*]"}) {
			t.Errorf("%s: X-Ray statements %v, want PutTraceSegments and PutTelemetryRecords alone", id, xray)
		}
	}
	if fns != 3 {
		t.Fatalf("%d functions after the transform, want 3", fns)
	}
}
