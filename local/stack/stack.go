// Package stack reads what the local tools need from template.yaml: each
// function with its routes, environment, policies and build target, so that
// local runs, invocations and tests follow the deployed template rather than
// a second description of it.
package stack

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/intrinsics"
	"github.com/idemkeys/idem/local/dynamo"
	"gopkg.in/yaml.v3"
)

// Route is one HttpApi event: "POST" and "/charges/{id}".
type Route struct {
	Event  string
	Method string
	Path   string
}

// Statement is one policy statement, its resources as written: a reference
// to a table's ARN reads "!GetAtt ChargesTable.Arn".
type Statement struct {
	Actions   []string
	Resources []string
}

// Function is an AWS::Serverless::Function, with Globals applied.
type Function struct {
	LogicalID string
	Package   string // the Go package its Makefile build target builds, "./functions/charge"
	Timeout   int
	// Env holds the environment. A reference to a resource reads
	// "!Ref ChargesTable"; references to parameters hold their defaults.
	Env      map[string]string
	Routes   []Route
	Policies []Statement
}

// Template is the part of template.yaml the local tools use.
type Template struct {
	Dir       string // the directory holding template.yaml and the Makefile
	Functions []Function
}

// Function returns the function with the given logical id.
func (t *Template) Function(logicalID string) (*Function, error) {
	for i := range t.Functions {
		if t.Functions[i].LogicalID == logicalID {
			return &t.Functions[i], nil
		}
	}
	return nil, fmt.Errorf("template has no function %s", logicalID)
}

// RefPrefix and GetAttPrefix mark references to resources in the values.
const (
	RefPrefix    = "!Ref "
	GetAttPrefix = "!GetAtt "
)

// Load reads the template at path and the Makefile beside it.
func Load(path string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
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
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	resolve := &intrinsics.ProcessorOptions{IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
		"Ref": func(name string, input, template any) any {
			if s, ok := input.(string); ok {
				if _, isParam := doc.Parameters[s]; !isParam && !strings.HasPrefix(s, "AWS::") {
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
				parts := make([]string, len(v))
				for i := range v {
					parts[i] = fmt.Sprint(v[i])
				}
				return GetAttPrefix + strings.Join(parts, ".")
			}
			return nil
		},
	}}
	known, err := dynamo.ForGoformation(raw)
	if err != nil {
		return nil, err
	}
	tpl, err := goformation.ParseYAMLWithOptions(known, resolve)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	targets, err := makeTargets(filepath.Join(dir, "Makefile"))
	if err != nil {
		return nil, err
	}

	out := &Template{Dir: dir}
	for id, f := range tpl.GetAllServerlessFunctionResources() {
		fn := Function{LogicalID: id, Package: targets["build-"+id], Timeout: doc.Globals.Function.Timeout, Env: map[string]string{}}
		if f.Timeout != nil {
			fn.Timeout = *f.Timeout
		}
		for k, node := range doc.Globals.Function.Environment.Variables {
			fn.Env[k] = nodeValue(node, doc.Parameters)
		}
		if f.Environment != nil {
			for k, v := range f.Environment.Variables {
				fn.Env[k] = v
			}
		}
		for name, ev := range f.Events {
			if ev.Type != "HttpApi" || ev.Properties == nil || ev.Properties.HttpApiEvent == nil {
				continue
			}
			h := ev.Properties.HttpApiEvent
			if h.Method == nil || h.Path == nil {
				return nil, fmt.Errorf("%s event %s: HttpApi events here need Method and Path", id, name)
			}
			fn.Routes = append(fn.Routes, Route{Event: name, Method: strings.ToUpper(*h.Method), Path: *h.Path})
		}
		sort.Slice(fn.Routes, func(i, j int) bool { return fn.Routes[i].Event < fn.Routes[j].Event })
		if f.Policies != nil && f.Policies.IAMPolicyDocumentArray != nil {
			for _, doc := range *f.Policies.IAMPolicyDocumentArray {
				for _, st := range doc.Statement {
					fn.Policies = append(fn.Policies, statement(st))
				}
			}
		}
		// A function with a role of its own has that role's policies only.
		if f.Role != nil {
			roleID, ok := strings.CutPrefix(*f.Role, GetAttPrefix)
			role, found := tpl.GetAllIAMRoleResources()[strings.TrimSuffix(roleID, ".Arn")]
			if !ok || !found {
				return nil, fmt.Errorf("%s: Role %q is not a role of this template", id, *f.Role)
			}
			for _, p := range role.Policies {
				doc, _ := p.PolicyDocument.(map[string]any)
				sts, _ := doc["Statement"].([]any)
				for _, st := range sts {
					fn.Policies = append(fn.Policies, statement(st))
				}
			}
		}
		out.Functions = append(out.Functions, fn)
	}
	sort.Slice(out.Functions, func(i, j int) bool { return out.Functions[i].LogicalID < out.Functions[j].LogicalID })
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

// makeTargets maps each "build-<LogicalId>:" target of the Makefile, the
// ones sam build runs, to the Go package its recipe builds.
func makeTargets(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	targets := map[string]string{}
	current := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "build-") && strings.HasSuffix(line, ":") {
			current = strings.TrimSuffix(line, ":")
			continue
		}
		if current != "" && strings.HasPrefix(line, "\t") {
			for _, field := range strings.Fields(line) {
				if strings.HasPrefix(field, "./functions/") {
					targets[current] = field
				}
			}
			continue
		}
		current = ""
	}
	return targets, sc.Err()
}

// LocalEnv is the function's environment for a local run, as KEY=value:
// each reference to a resource resolved through refs (logical id to local
// value, a table's local name say), then extra added over it. A reference
// with no local value is an error, so that nothing runs half configured.
func (f *Function) LocalEnv(refs, extra map[string]string) ([]string, error) {
	env := map[string]string{}
	for k, v := range f.Env {
		if target, ok := strings.CutPrefix(v, RefPrefix); ok {
			local, found := refs[target]
			if !found {
				if _, overridden := extra[k]; !overridden {
					return nil, fmt.Errorf("%s: %s refers to %s, which has no local value", f.LogicalID, k, target)
				}
			}
			v = local
		}
		env[k] = v
	}
	for k, v := range extra {
		if v == "" {
			delete(env, k)
			continue
		}
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// EnvFile is where `make run` writes how to reach the local stack, as
// KEY=value lines: the engine's endpoint, the provider's URL and secret, and
// for each resource the local value of a reference to it, as
// REF_<LogicalId>.
const EnvFile = "local/.run/stack.env"

// RefVar prefixes the variables of EnvFile that resolve references, and
// LocalVar those that configure the local tools only.
const (
	RefVar   = "REF_"
	LocalVar = "LOCAL_"
)

// RuntimeEnv is fn's environment for a local run against the stack that
// wrote vars: references resolved through the REF_ entries, the others
// (DYNAMODB_ENDPOINT, PROVIDER_*) set over the template's values, and the
// fixed region and credentials of local engines.
func RuntimeEnv(fn *Function, vars map[string]string) ([]string, error) {
	refs := map[string]string{}
	extra := map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
	for k, v := range vars {
		switch id, ok := strings.CutPrefix(k, RefVar); {
		case ok:
			refs[id] = v
		case strings.HasPrefix(k, LocalVar):
			// The local stack's own settings (the dev token secret): not
			// the functions' business.
		default:
			extra[k] = v
		}
	}
	return fn.LocalEnv(refs, extra)
}

// WriteEnv writes vars to path, sorted, creating the directory.
func WriteEnv(path string, vars map[string]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lines := make([]string, 0, len(vars))
	for k, v := range vars {
		lines = append(lines, k+"="+v)
	}
	sort.Strings(lines)
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// ReadEnv reads a file written by WriteEnv.
func ReadEnv(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	return vars, nil
}

// Build builds every function's bootstrap into dir/<fn>/bootstrap, from the
// package its Makefile target names, as Lambda runs it: Linux, no cgo,
// -tags lambda.norpc, stripped. The host architecture keeps the binaries runnable here
// and shares the build cache with tests; make build makes the arm64 ones.
func (t *Template) Build(dir string) error {
	for _, fn := range t.Functions {
		if fn.Package == "" {
			return fmt.Errorf("%s: the Makefile has no build-%s target", fn.LogicalID, fn.LogicalID)
		}
		out := filepath.Join(dir, filepath.Base(fn.Package), "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, fn.Package)
		cmd.Dir, cmd.Env = t.Dir, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", fn.Package, err, b)
		}
	}
	return nil
}

// Bootstrap is where Build puts fn's binary under dir.
func (f *Function) Bootstrap(dir string) string {
	return filepath.Join(dir, filepath.Base(f.Package), "bootstrap")
}

// Project loads the template.yaml of the project around the working
// directory (found in it or a parent).
func Project() (*Template, error) {
	path, err := dynamo.FindTemplate(".")
	if err != nil {
		return nil, err
	}
	return Load(path)
}
