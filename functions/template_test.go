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

// needs is what each function's code calls on each table: the policies must
// grant exactly this. TransactWriteItems is authorised per action inside it.
var needs = map[string]map[string][]string{
	"ChargeFunction": {
		"IdempotencyTable": {"dynamodb:DeleteItem", "dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		// No DeleteItem on the charges: only the attempt markers, which
		// the commit deletes (functions/charge/settle.go), are deleted.
		"ChargesTable":  {"dynamodb:GetItem", "dynamodb:PutItem"},
		"AttemptsTable": {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"},
	},
	"OrderFunction": {
		"IdempotencyTable": {"dynamodb:DeleteItem", "dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		"OrdersTable":      {"dynamodb:GetItem", "dynamodb:PutItem"},
	},
	"OrderStatsFunction": {
		"IdempotencyTable": {"dynamodb:DeleteItem", "dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		// GetItem: the newest order the stats hold (functions/orderstats/stats.go).
		"OrderStatsTable": {"dynamodb:GetItem", "dynamodb:UpdateItem"},
		// What polling a queue takes, on its own queue only.
		"OrderEventsQueue": {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},
	},
}

func TestPoliciesGrantOnlyWhatTheCodeUses(t *testing.T) {
	_, tpl := load(t)
	for _, fn := range tpl.Functions {
		want, ok := needs[fn.LogicalID]
		if !ok {
			t.Errorf("%s: no least-privilege expectation written for it here", fn.LogicalID)
			continue
		}
		granted := map[string][]string{}
		for _, st := range fn.Policies {
			for _, a := range st.Actions {
				if strings.Contains(a, "*") {
					t.Errorf("%s: wildcard action %q", fn.LogicalID, a)
				}
			}
			for _, r := range st.Resources {
				// A log group's ARN ends in ":*", its streams: still one group.
				logStreams := strings.Contains(r, ":log-group:/aws/lambda/") && strings.Count(r, "*") == 1 && strings.HasSuffix(r, ":*")
				if strings.Contains(r, "*") && !logStreams {
					t.Errorf("%s: wildcard resource %q", fn.LogicalID, r)
				}
				if table, ok := strings.CutPrefix(r, template.GetAttPrefix); ok {
					table = strings.TrimSuffix(table, ".Arn")
					granted[table] = append(granted[table], st.Actions...)
				}
			}
		}
		for table := range granted {
			sort.Strings(granted[table])
		}
		for table, actions := range want {
			if !slices.Equal(granted[table], actions) {
				t.Errorf("%s on %s: granted %v, the code uses %v", fn.LogicalID, table, granted[table], actions)
			}
		}
		for table := range granted {
			if _, ok := want[table]; !ok {
				t.Errorf("%s: granted access to %s, which it does not use", fn.LogicalID, table)
			}
		}
		// The tables it may touch are the tables its environment names.
		var named, grantedTables []string
		for _, v := range fn.Env {
			if target, ok := strings.CutPrefix(v, template.RefPrefix); ok && strings.HasSuffix(target, "Table") {
				named = append(named, target)
			}
		}
		for table := range granted {
			if strings.HasSuffix(table, "Table") {
				grantedTables = append(grantedTables, table)
			}
		}
		sort.Strings(named)
		sort.Strings(grantedTables)
		if !slices.Equal(named, grantedTables) {
			t.Errorf("%s: environment names tables %v, policies grant %v", fn.LogicalID, named, grantedTables)
		}
	}
}

func TestEveryRouteNeedsAVerifiedToken(t *testing.T) {
	path, _ := load(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
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
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
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
