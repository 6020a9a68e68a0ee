// Package functions_test checks template.yaml against the code it deploys.
package functions_test

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"gopkg.in/yaml.v3"

	"github.com/idemkeys/idem/local/template"
	"github.com/idemkeys/idem/local/template/templatetest"
	"github.com/idemkeys/idem/pkg/idem"
)

func load(t *testing.T) (string, *template.Template) {
	t.Helper()
	tpl := templatetest.Project(t)
	return filepath.Join(tpl.Dir, "template.yaml"), tpl
}

// rawTemplate decodes template.yaml into doc as YAML, its tags as they
// are written, for a test of what the parsed template does not carry, and
// returns the template's path.
func rawTemplate(t *testing.T, doc any) string {
	t.Helper()
	path, _ := load(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, doc); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEveryFunctionBuildsFromItsMakefileTarget(t *testing.T) {
	_, tpl := load(t)
	if len(tpl.Functions) == 0 {
		t.Fatal("no functions in the template")
	}
	for _, fn := range tpl.Functions {
		if fn.Package == "" {
			t.Fatalf("%s: the Makefile has no build-%s target (BuildMethod: makefile runs it)", fn.LogicalID, fn.LogicalID)
		}
	}
	if testing.Short() {
		t.Skip("every function built from its Makefile target, a build of each: make test runs it")
	}
	bin := bootstraps(t, tpl)
	for _, fn := range tpl.Functions {
		if _, err := os.Stat(fn.Bootstrap(bin)); err != nil {
			t.Errorf("%s: %v", fn.LogicalID, err)
		}
	}
}

func TestOnlyTheIdempotencyTableExpiresItems(t *testing.T) {
	path, _ := load(t)
	tables, err := template.Tables(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		want := ""
		if tb.LogicalID == "IdempotencyTable" {
			want = idem.AttrExpiresAt
			if len(tb.KeySchema) != 1 || aws.ToString(tb.KeySchema[0].AttributeName) != idem.AttrPK {
				t.Errorf("IdempotencyTable key %v, the code writes %q", tb.KeySchema, idem.AttrPK)
			}
		}
		if tb.TTLAttribute != want {
			t.Errorf("%s: TTL attribute %q, want %q", tb.LogicalID, tb.TTLAttribute, want)
		}
	}
}

// eventSourceNeeds is what a function's event source mapping, not its
// code, calls with the function's role: what polling an SQS queue takes
// (AWS Lambda's documented list), on its own queue only. What the code
// calls on DynamoDB is held elsewhere, from the calls themselves: each
// function's tests record every call its code makes, and apitest.Main
// holds its role to exactly those (TestEveryFunctionsRoleIsHeldToItsCalls).
var eventSourceNeeds = map[string]map[string][]string{
	"OrderStatsFunction": {
		"OrderEventsQueue": {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},
	},
}

// xrayActions are what active tracing needs of a function's role: Lambda
// sends the invocation's segments with it, and the ADOT collector's X-Ray
// exporter the function's spans.
var xrayActions = []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}

func TestPoliciesGrantOnlyWhatTheCodeUses(t *testing.T) {
	_, tpl := load(t)
	for _, fn := range tpl.Functions {
		granted := map[string][]string{}
		for _, st := range fn.Policies {
			for _, a := range st.Actions {
				if strings.Contains(a, "*") {
					t.Errorf("%s: wildcard action %q", fn.LogicalID, a)
				}
			}
			// X-Ray's PutTraceSegments and PutTelemetryRecords take no
			// resource ARN: "*", in a statement of those two alone.
			traceSegments := slices.Equal(st.Actions, xrayActions) && slices.Equal(st.Resources, []string{"*"})
			for _, r := range st.Resources {
				// A log group's ARN ends in ":*", its streams: still one group.
				logStreams := strings.Contains(r, ":log-group:/aws/lambda/") && strings.Count(r, "*") == 1 && strings.HasSuffix(r, ":*")
				if strings.Contains(r, "*") && !logStreams && !traceSegments {
					t.Errorf("%s: wildcard resource %q", fn.LogicalID, r)
				}
				if res, ok := strings.CutPrefix(r, template.GetAttPrefix); ok {
					res = strings.TrimSuffix(res, ".Arn")
					granted[res] = append(granted[res], st.Actions...)
				}
			}
		}
		for res := range granted {
			sort.Strings(granted[res])
		}
		for res, actions := range eventSourceNeeds[fn.LogicalID] {
			if !slices.Equal(granted[res], actions) {
				t.Errorf("%s on %s: granted %v, its event source uses %v", fn.LogicalID, res, granted[res], actions)
			}
		}
		// The resources it may touch are the tables its environment names
		// and its event source's queue.
		var named, grantedTo []string
		for _, v := range fn.Env {
			if target, ok := strings.CutPrefix(v, template.RefPrefix); ok && strings.HasSuffix(target, "Table") {
				named = append(named, target)
			}
		}
		for res := range eventSourceNeeds[fn.LogicalID] {
			named = append(named, res)
		}
		for res := range granted {
			grantedTo = append(grantedTo, res)
		}
		sort.Strings(named)
		sort.Strings(grantedTo)
		if !slices.Equal(named, grantedTo) {
			t.Errorf("%s: environment and event source name %v, policies grant %v", fn.LogicalID, named, grantedTo)
		}
	}
}

// Every function's tests hold its role to the DynamoDB calls its code
// makes in them (apitest.Main in their TestMain, with the function's
// logical id), so that an action granted and never called, or called and
// not granted, fails that package; a function whose package does not is a
// function whose role nothing holds.
func TestEveryFunctionsRoleIsHeldToItsCalls(t *testing.T) {
	_, tpl := load(t)
	for _, fn := range tpl.Functions {
		files, err := filepath.Glob(filepath.Join(tpl.Dir, fn.Package, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no tests in %s", fn.LogicalID, fn.Package)
			continue
		}
		held := false
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			held = held || strings.Contains(string(src), `apitest.Main(m, "`+fn.LogicalID+`", `)
		}
		if !held {
			t.Errorf("%s: no TestMain in %s calls apitest.Main(m, %q, calls)", fn.LogicalID, fn.Package, fn.LogicalID)
		}
	}
}

func TestEveryRouteNeedsAVerifiedToken(t *testing.T) {
	var doc struct {
		Globals struct {
			Function struct {
				Runtime       string   `yaml:"Runtime"`
				Architectures []string `yaml:"Architectures"`
				Handler       string   `yaml:"Handler"`
			} `yaml:"Function"`
		} `yaml:"Globals"`
		Resources map[string]struct {
			Type       string         `yaml:"Type"`
			Properties map[string]any `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	rawTemplate(t, &doc)
	g := doc.Globals.Function
	if g.Runtime != "provided.al2023" || !slices.Equal(g.Architectures, []string{"arm64"}) || g.Handler != "bootstrap" {
		t.Errorf("Globals: runtime %q, architectures %v, handler %q", g.Runtime, g.Architectures, g.Handler)
	}
	api, ok := doc.Resources["HttpApi"]
	if !ok || api.Type != "AWS::Serverless::HttpApi" {
		t.Fatal("no AWS::Serverless::HttpApi named HttpApi")
	}
	auth, _ := api.Properties["Auth"].(map[string]any)
	def, _ := auth["DefaultAuthorizer"].(string)
	authorizers, _ := auth["Authorizers"].(map[string]any)
	jwt, _ := authorizers[def].(map[string]any)
	if def == "" || jwt["JwtConfiguration"] == nil {
		t.Fatalf("HttpApi's default authorizer %q is not a JWT authorizer", def)
	}
	for id, r := range doc.Resources {
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		events, _ := r.Properties["Events"].(map[string]any)
		for name, e := range events {
			props, _ := e.(map[string]any)["Properties"].(map[string]any)
			if a, ok := props["Auth"].(map[string]any); ok && a["Authorizer"] == "NONE" {
				t.Errorf("%s event %s opts out of the authorizer", id, name)
			}
		}
	}
}
