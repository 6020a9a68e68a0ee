package template

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/intrinsics"
	"gopkg.in/yaml.v3"
)

// globals are the template's Parameters and Globals, which goformation
// does not apply to the functions.
type globals struct {
	Parameters map[string]any `yaml:"Parameters"`
	Globals    struct {
		Function struct {
			Timeout     int `yaml:"Timeout"`
			Environment struct {
				Variables map[string]yaml.Node `yaml:"Variables"`
			} `yaml:"Environment"`
		} `yaml:"Function"`
	} `yaml:"Globals"`
}

func readGlobals(raw []byte) (*globals, error) {
	var g globals
	if err := yaml.Unmarshal(raw, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// resolver renders a Ref to a resource as "!Ref X" and a GetAtt as
// "!GetAtt X.Attr"; a Ref to a parameter is its default.
func (g *globals) resolver() *intrinsics.ProcessorOptions {
	return &intrinsics.ProcessorOptions{IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
		"Ref": func(name string, input, template any) any {
			if s, ok := input.(string); ok {
				if _, isParam := g.Parameters[s]; !isParam && !strings.HasPrefix(s, "AWS::") {
					return RefPrefix + s
				}
			}
			return intrinsics.Ref(name, input, template)
		},
		"Fn::GetAtt": func(name string, input, template any) any {
			switch v := input.(type) {
			case string:
				return GetAttPrefix + v
			case []any:
				return GetAttPrefix + strings.Join(strs(v), ".")
			}
			return nil
		},
	}}
}

// function reads the function id, Globals applied; its Package is the
// Makefile's to say.
func (g *globals) function(cfn *cloudformation.Template, id string, f *serverless.Function) (Function, error) {
	fn := Function{LogicalID: id, Timeout: g.Globals.Function.Timeout, Env: map[string]string{}}
	if f.Timeout != nil {
		fn.Timeout = *f.Timeout
	}
	for k, node := range g.Globals.Function.Environment.Variables {
		fn.Env[k] = nodeValue(node, g.Parameters)
	}
	if f.Environment != nil {
		for k, v := range f.Environment.Variables {
			fn.Env[k] = v
		}
	}
	var err error
	if fn.Routes, err = routes(id, f); err != nil {
		return fn, err
	}
	fn.Policies, err = policies(cfn, id, f)
	return fn, err
}

// routes are f's HttpApi events, ordered by event name.
func routes(id string, f *serverless.Function) ([]Route, error) {
	var out []Route
	for name, ev := range f.Events {
		if ev.Type != "HttpApi" || ev.Properties == nil || ev.Properties.HttpApiEvent == nil {
			continue
		}
		h := ev.Properties.HttpApiEvent
		if h.Method == nil || h.Path == nil {
			return nil, fmt.Errorf("%s event %s: HttpApi events here need Method and Path", id, name)
		}
		out = append(out, Route{Event: name, Method: strings.ToUpper(*h.Method), Path: *h.Path})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Event < out[j].Event })
	return out, nil
}

// policies are f's inline policy statements, then those of its own role:
// a function with a role of its own has that role's policies only.
func policies(cfn *cloudformation.Template, id string, f *serverless.Function) ([]Statement, error) {
	var out []Statement
	if f.Policies != nil && f.Policies.IAMPolicyDocumentArray != nil {
		for _, doc := range *f.Policies.IAMPolicyDocumentArray {
			for _, st := range doc.Statement {
				out = append(out, statement(st))
			}
		}
	}
	if f.Role == nil {
		return out, nil
	}
	roleID, ok := strings.CutPrefix(*f.Role, GetAttPrefix)
	role, found := cfn.GetAllIAMRoleResources()[strings.TrimSuffix(roleID, ".Arn")]
	if !ok || !found {
		return nil, fmt.Errorf("%s: Role %q is not a role of this template", id, *f.Role)
	}
	for _, p := range role.Policies {
		doc, _ := p.PolicyDocument.(map[string]any)
		sts, _ := doc["Statement"].([]any)
		for _, st := range sts {
			out = append(out, statement(st))
		}
	}
	return out, nil
}

// nodeValue renders a Globals variable as goformation renders the rest: a
// scalar, a parameter's default, or "!Ref X" for a resource.
func nodeValue(n yaml.Node, params map[string]any) string {
	target := ""
	switch {
	case n.Tag == "!Ref":
		target = n.Value
	case n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "Ref":
		target = n.Content[1].Value
	default:
		return n.Value
	}
	if p, ok := params[target].(map[string]any); ok {
		return fmt.Sprint(p["Default"])
	}
	return RefPrefix + target
}

func statement(st any) Statement {
	m, _ := st.(map[string]any)
	return Statement{Actions: strs(m["Action"]), Resources: strs(m["Resource"])}
}

func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// tables reads the AWS::DynamoDB::Table resources, ordered by logical id.
func tables(cfn *cloudformation.Template) ([]Table, error) {
	var out []Table
	for id, r := range cfn.GetAllDynamoDBTableResources() {
		t := Table{LogicalID: id}
		for _, a := range r.AttributeDefinitions {
			t.Attributes = append(t.Attributes, types.AttributeDefinition{
				AttributeName: aws.String(a.AttributeName),
				AttributeType: types.ScalarAttributeType(a.AttributeType),
			})
		}
		for _, k := range r.KeySchema {
			t.KeySchema = append(t.KeySchema, types.KeySchemaElement{
				AttributeName: aws.String(k.AttributeName),
				KeyType:       types.KeyType(k.KeyType),
			})
		}
		if ttl := r.TimeToLiveSpecification; ttl != nil && ttl.Enabled {
			t.TTLAttribute = aws.ToString(ttl.AttributeName)
		}
		if len(r.GlobalSecondaryIndexes) > 0 || len(r.LocalSecondaryIndexes) > 0 {
			return nil, fmt.Errorf("table %s: secondary indexes are not mirrored locally yet", id)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out, nil
}
