// Package template is the one reader of template.yaml: each function with
// its routes, environment (Globals applied), policies and Makefile build
// target, and each DynamoDB table, so that local runs, invocations and tests
// follow the deployed template rather than a second description of it.
package template

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
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

// Table is an AWS::DynamoDB::Table, so that local tables are the deployed
// ones: same keys, same TTL attribute.
type Table struct {
	LogicalID    string
	Attributes   []types.AttributeDefinition
	KeySchema    []types.KeySchemaElement
	TTLAttribute string // empty when the table does not expire items
}

// Template is the part of template.yaml the local tools use.
type Template struct {
	Dir       string     // the directory holding template.yaml and the Makefile
	Functions []Function // ordered by logical id
	Tables    []Table    // ordered by logical id
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

// Table returns the table with the given logical id.
func (t *Template) Table(logicalID string) (Table, error) {
	for _, tb := range t.Tables {
		if tb.LogicalID == logicalID {
			return tb, nil
		}
	}
	return Table{}, fmt.Errorf("template has no table %s", logicalID)
}

// RefPrefix and GetAttPrefix mark references to resources in the values.
const (
	RefPrefix    = "!Ref "
	GetAttPrefix = "!GetAtt "
)

// FindTemplate returns the path of the project's template.yaml, looking in
// dir and each of its parents, so that tests find it from any package.
func FindTemplate(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "template.yaml")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("template.yaml not found in this directory or any parent")
		}
		dir = parent
	}
}

// ProjectDir is the project root: the directory of the template.yaml
// found from the working directory (in it or a parent).
func ProjectDir() (string, error) {
	path, err := FindTemplate(".")
	if err != nil {
		return "", err
	}
	return filepath.Dir(path), nil
}

// Project loads the template.yaml of the project around the working
// directory (found in it or a parent).
func Project() (*Template, error) {
	path, err := FindTemplate(".")
	if err != nil {
		return nil, err
	}
	return Load(path)
}

// parsing serializes goformation's parses: each one registers its short
// form tags again in a package-level map (intrinsics.ProcessYAML) while
// another iterates over it, and two at once end the process with
// "concurrent map iteration and map write" (tests that make their tables
// in parallel read the template each).
var parsing sync.Mutex

func parseYAML(known []byte, g *globals) (*cloudformation.Template, error) {
	parsing.Lock()
	defer parsing.Unlock()
	return goformation.ParseYAMLWithOptions(known, g.resolver())
}

// Load reads the template at path and the Makefile beside it.
func Load(path string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g, err := readGlobals(raw)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	known, err := ForGoformation(raw)
	if err != nil {
		return nil, err
	}
	cfn, err := parseYAML(known, g)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	targets, err := makeTargets(filepath.Join(dir, "Makefile"))
	if err != nil {
		return nil, err
	}
	out := &Template{Dir: dir}
	for id, f := range cfn.GetAllServerlessFunctionResources() {
		fn, err := g.function(cfn, id, f)
		if err != nil {
			return nil, err
		}
		fn.Package = targets["build-"+id]
		out.Functions = append(out.Functions, fn)
	}
	sort.Slice(out.Functions, func(i, j int) bool { return out.Functions[i].LogicalID < out.Functions[j].LogicalID })
	if out.Tables, err = tables(cfn); err != nil {
		return nil, err
	}
	return out, nil
}

// Tables reads the tables of the template at path, ordered by logical id.
func Tables(path string) ([]Table, error) {
	tpl, err := Load(path)
	if err != nil {
		return nil, err
	}
	return tpl.Tables, nil
}
