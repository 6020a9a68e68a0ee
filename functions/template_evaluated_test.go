package functions_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/idemkeys/idem/functions/internal/samlocal"
	"github.com/idemkeys/idem/local/template"
)

// parse reads template.yaml with goformation, its parameters overridden by
// params and its conditions evaluated; a GetAtt reads "GetAtt X.Attr".
func parse(t *testing.T, params map[string]any) *cloudformation.Template {
	t.Helper()
	path, _ := load(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err = template.ForGoformation(raw)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := goformation.ParseYAMLWithOptions(raw, &intrinsics.ProcessorOptions{
		ParameterOverrides: params, EvaluateConditions: true,
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
			"Fn::GetAtt": func(name string, input, template any) any {
				if parts, ok := input.([]any); ok {
					return fmt.Sprintf("GetAtt %v.%v", parts[0], parts[1])
				}
				return "GetAtt " + fmt.Sprint(input)
			},
			// goformation's Fn::Split returns []string, which its
			// Fn::Select does not index; CloudFormation's does.
			"Fn::Select": func(name string, input, template any) any {
				if args, ok := input.([]any); ok && len(args) == 2 {
					if list, ok := args[1].([]string); ok {
						items := make([]any, len(list))
						for i := range list {
							items[i] = list[i]
						}
						input = []any{args[0], items}
					}
				}
				return intrinsics.FnSelect(name, input, template)
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// chargeStatements returns the policy statements of the charge function's
// role.
func chargeStatements(t *testing.T, tpl *cloudformation.Template) []map[string]any {
	t.Helper()
	fn := tpl.GetAllServerlessFunctionResources()["ChargeFunction"]
	if fn.Role == nil {
		t.Fatal("ChargeFunction has no role of its own")
	}
	id := strings.TrimSuffix(strings.TrimPrefix(*fn.Role, "GetAtt "), ".Arn")
	role, ok := tpl.GetAllIAMRoleResources()[id]
	if !ok {
		t.Fatalf("ChargeFunction's role %q is no role of the template", *fn.Role)
	}
	var out []map[string]any
	for _, p := range role.Policies {
		doc, _ := p.PolicyDocument.(map[string]any)
		sts, _ := doc["Statement"].([]any)
		for _, st := range sts {
			if m, ok := st.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func actionsOf(st map[string]any) string { return fmt.Sprint(st["Action"]) }

// The parameter's ARN is right with or without the leading "/": SSM's ARN is
// "parameter" then the name for "/idem/key", "parameter/" then it for
// "idem/key".
func TestProviderSecretARNWithOrWithoutLeadingSlash(t *testing.T) {
	for _, name := range []string{"/idem/provider-secret-key", "idem/provider-secret-key"} {
		var got []string
		for _, st := range chargeStatements(t, parse(t, map[string]any{"ProviderSecretParameter": name})) {
			if strings.Contains(actionsOf(st), "ssm:GetParameter") {
				got = append(got, fmt.Sprint(st["Resource"]))
			}
		}
		if len(got) != 1 || !strings.HasSuffix(got[0], ":parameter/idem/provider-secret-key") || strings.Contains(got[0], "//") {
			t.Errorf("name %q: ssm:GetParameter on %v, want one ARN ending in :parameter/idem/provider-secret-key", name, got)
		}
	}
}

// A customer managed key for the SecureString is granted kms:Decrypt, and
// through SSM only; without one, no KMS permission at all.
func TestKMSKeyGrantsDecryptOnlyWhenGiven(t *testing.T) {
	const key = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	for _, given := range []string{"", key} {
		var kms []map[string]any
		for _, st := range chargeStatements(t, parse(t, map[string]any{"ProviderSecretKmsKeyArn": given})) {
			if strings.Contains(actionsOf(st), "kms:") {
				kms = append(kms, st)
			}
		}
		switch {
		case given == "" && len(kms) != 0:
			t.Errorf("no key given, yet %v", kms)
		case given != "" && (len(kms) != 1 || actionsOf(kms[0]) != "[kms:Decrypt]" || kms[0]["Resource"] != key || !strings.Contains(fmt.Sprint(kms[0]["Condition"]), "kms:ViaService")):
			t.Errorf("key given: %v, want kms:Decrypt on it via SSM", kms)
		}
	}
}

// Every route is throttled by the HTTP API's stage from parameters, and
// the charge's routes, which call the provider (GET /charges/{id} to
// refresh a pending charge), more tightly: the provider's rate limit is
// shared by every tenant.
func TestHTTPAPIThrottlesEveryRoute(t *testing.T) {
	tpl := parse(t, map[string]any{"ThrottlingRateLimit": 7, "ThrottlingBurstLimit": 9, "ChargeThrottlingRateLimit": 3, "ChargeThrottlingBurstLimit": 4})
	api := tpl.GetAllServerlessHttpApiResources()["HttpApi"]
	d := api.DefaultRouteSettings
	if d == nil || d.ThrottlingRateLimit == nil || *d.ThrottlingRateLimit != 7 || d.ThrottlingBurstLimit == nil || *d.ThrottlingBurstLimit != 9 {
		t.Fatalf("DefaultRouteSettings %+v, want the parameters' 7 and 9", d)
	}
	for _, name := range []string{"CreateCharge", "GetCharge"} {
		ev := tpl.GetAllServerlessFunctionResources()["ChargeFunction"].Events[name].Properties.HttpApiEvent
		if rs := ev.RouteSettings; rs == nil || rs.ThrottlingRateLimit == nil || *rs.ThrottlingRateLimit != 3 || rs.ThrottlingBurstLimit == nil || *rs.ThrottlingBurstLimit != 4 {
			t.Errorf("%s RouteSettings %+v, want 3 and 4", name, ev.RouteSettings)
		}
	}
}

// The pipe dead-letters what it cannot deliver before the stream trims it
// (24 hours), may send there, and an alarm watches that queue.
func TestPipeDeadLettersBeforeTheStreamTrims(t *testing.T) {
	tpl := parse(t, nil)
	pipe := tpl.GetAllPipesPipeResources()["OrderEventsPipe"]
	p := pipe.SourceParameters.DynamoDBStreamParameters
	if p.DeadLetterConfig == nil || p.DeadLetterConfig.Arn == nil || *p.DeadLetterConfig.Arn != "GetAtt OrderEventsPipeDLQ.Arn" {
		t.Fatalf("DeadLetterConfig %+v, want OrderEventsPipeDLQ", p.DeadLetterConfig)
	}
	if p.MaximumRecordAgeInSeconds == nil || *p.MaximumRecordAgeInSeconds < 60 || *p.MaximumRecordAgeInSeconds >= 24*3600 {
		t.Fatalf("MaximumRecordAgeInSeconds %v, want under the stream's 24 hours", p.MaximumRecordAgeInSeconds)
	}
	role := tpl.GetAllIAMRoleResources()["OrderEventsPipeRole"]
	if !strings.Contains(fmt.Sprint(role.Policies), "GetAtt OrderEventsPipeDLQ.Arn") {
		t.Fatalf("the pipe's role may not send to its dead-letter queue: %v", role.Policies)
	}
	watched := false
	for _, a := range tpl.GetAllCloudWatchAlarmResources() {
		for _, d := range a.Dimensions {
			watched = watched || d.Value == "GetAtt OrderEventsPipeDLQ.QueueName"
		}
	}
	if !watched {
		t.Fatal("no alarm on the pipe's dead-letter queue")
	}
}

// The pipe sends each stream record to the queue as it is, and the stream
// holds the new image: so the order item's traceparent reaches the
// consumer (functions/internal/tracing.ItemAttribute), which DynamoDB
// Streams carry no other way. An input template would have to keep it.
func TestThePipeSendsTheStreamRecordWithTheNewImage(t *testing.T) {
	tpl := parse(t, nil)
	pipe := tpl.GetAllPipesPipeResources()["OrderEventsPipe"]
	if tp := pipe.TargetParameters; tp != nil && tp.InputTemplate != nil {
		t.Errorf("the pipe rewrites each record (%q): the consumer would lose the order's traceparent and more", *tp.InputTemplate)
	}
	orders := tpl.GetAllDynamoDBTableResources()["OrdersTable"]
	if s := orders.StreamSpecification; s == nil || !strings.HasPrefix(s.StreamViewType, "NEW_") {
		t.Errorf("OrdersTable's stream %+v, want the new image (NEW_IMAGE or NEW_AND_OLD_IMAGES)", orders.StreamSpecification)
	}
}

// No function of the template sets AWS_SAM_LOCAL, neither on its own nor
// through Globals: deployed, it would make the functions take the scope from
// an unverified token (functions/internal/samlocal.Serve, SECURITY.md).
func TestNoFunctionSetsAWSSAMLocal(t *testing.T) {
	tpl := parse(t, nil)
	checked := 0
	for id, fn := range tpl.GetAllServerlessFunctionResources() {
		checked++
		if fn.Environment != nil {
			if _, set := fn.Environment.Variables[samlocal.EnvVar]; set {
				t.Errorf("%s sets %s", id, samlocal.EnvVar)
			}
		}
	}
	for id, fn := range tpl.GetAllLambdaFunctionResources() {
		checked++
		if fn.Environment != nil {
			if _, set := fn.Environment.Variables[samlocal.EnvVar]; set {
				t.Errorf("%s sets %s", id, samlocal.EnvVar)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no functions in the template")
	}
	// goformation does not apply Globals: read them as written.
	var doc struct {
		Globals struct {
			Function struct {
				Environment struct {
					Variables map[string]any `yaml:"Variables"`
				} `yaml:"Environment"`
			} `yaml:"Function"`
		} `yaml:"Globals"`
	}
	rawTemplate(t, &doc)
	if len(doc.Globals.Function.Environment.Variables) == 0 {
		t.Fatal("no Globals variables read: the test reads the wrong place")
	}
	if _, set := doc.Globals.Function.Environment.Variables[samlocal.EnvVar]; set {
		t.Errorf("Globals set %s for every function", samlocal.EnvVar)
	}
}

// The secret key goes with every provider request, so the template takes
// the provider's base URL over TLS only: its AllowedPattern refuses plain
// HTTP, and a query, fragment or user info, which the client would send on
// or misread. (The local stack reaches its simulator through
// PROVIDER_LOCAL_URL, which the template declares empty.)
func TestProviderBaseURLIsHTTPSOnly(t *testing.T) {
	tpl := parse(t, nil)
	p, ok := tpl.Parameters["ProviderBaseURL"]
	if !ok {
		t.Fatal("no ProviderBaseURL parameter")
	}
	if p.AllowedPattern == nil || *p.AllowedPattern == "" {
		t.Fatal("ProviderBaseURL has no AllowedPattern: an http:// URL would be deployed")
	}
	pattern := regexp.MustCompile(*p.AllowedPattern)
	for url, ok := range map[string]bool{
		fmt.Sprint(p.Default):             true,
		"https://api.stripe.com":          true,
		"https://stripe.internal:8443/v0": true,
		"http://api.stripe.com":           false,
		"HTTP://api.stripe.com":           false,
		"api.stripe.com":                  false,
		"https://":                        false,
		"https://api.stripe.com?x=1":      false,
		"https://u:p@api.stripe.com":      false,
		"https://api.stripe.com/#f":       false,
		"https://api.stripe.com\nhttp://": false,
	} {
		if pattern.MatchString(url) != ok {
			t.Errorf("AllowedPattern %s on %q: %v, want %v", *p.AllowedPattern, url, !ok, ok)
		}
	}
}

// The order-event queue takes messages from the pipe alone: a queue policy
// denies SendMessage (SendMessageBatch is authorised as it) to every
// principal but the pipe's role, so no one else in the account, whatever
// their identity policy allows, can forge an order event for the stats.
func TestOnlyThePipeMaySendOrderEvents(t *testing.T) {
	var doc struct {
		Resources map[string]struct {
			Type       string         `yaml:"Type"`
			Properties map[string]any `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	rawTemplate(t, &doc)
	guarded := false
	for id, r := range doc.Resources {
		if r.Type != "AWS::SQS::QueuePolicy" || fmt.Sprint(r.Properties["Queues"]) != "[OrderEventsQueue]" {
			continue
		}
		policy, _ := r.Properties["PolicyDocument"].(map[string]any)
		statements, _ := policy["Statement"].([]any)
		for _, s := range statements {
			st, _ := s.(map[string]any)
			cond, _ := st["Condition"].(map[string]any)
			notPipe, _ := cond["ArnNotEquals"].(map[string]any)
			actions := fmt.Sprint(st["Action"])
			if st["Effect"] == "Deny" && st["Principal"] == "*" && (strings.Contains(actions, "sqs:SendMessage") || strings.Contains(actions, "sqs:*")) &&
				st["Resource"] == "OrderEventsQueue.Arn" && len(cond) == 1 && len(notPipe) == 1 && notPipe["aws:PrincipalArn"] == "OrderEventsPipeRole.Arn" {
				guarded = true
				t.Logf("%s denies %s to all but the pipe's role", id, actions)
			}
		}
	}
	if !guarded {
		t.Fatal("no queue policy on OrderEventsQueue denies SendMessage to every principal but OrderEventsPipeRole")
	}
}
