package docs_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/idemkeys/idem/local/template"
)

// ProblemBase is the base of every problem type the functions answer: the
// type of code c is ProblemBase + c, the section of http-api.md headed c.
const ProblemBase = "https://github.com/idemkeys/idem/blob/main/docs/http-api.md#"

type node = map[string]any

// openAPI is openapi.yaml, parsed.
func openAPI(t *testing.T) node {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(projectRoot(t), "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// resolve follows v's $ref within doc, if it has one.
func resolve(t *testing.T, doc node, v any) node {
	t.Helper()
	n, _ := v.(node)
	for n != nil {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		if !strings.HasPrefix(ref, "#/") {
			t.Fatalf("$ref %q: only references within openapi.yaml", ref)
		}
		var at any = doc
		for _, p := range strings.Split(ref[2:], "/") {
			m, _ := at.(node)
			at = m[p]
		}
		if at == nil {
			t.Fatalf("$ref %q resolves to nothing", ref)
		}
		n, _ = at.(node)
	}
	return n
}

// operations are openapi.yaml's operations by route key, "POST /charges".
func operations(doc node) map[string]node {
	ops := map[string]node{}
	paths, _ := doc["paths"].(node)
	for path, item := range paths {
		for method, op := range item.(node) {
			if o, ok := op.(node); ok && slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options"}, method) {
				ops[strings.ToUpper(method)+" "+path] = o
			}
		}
	}
	return ops
}

// TestOpenAPIDescribesEveryRouteOfTheTemplate holds openapi.yaml's paths to
// template.yaml's HttpApi routes, one operation per route and no other, and
// the Idempotency-Key header to the POST routes, which take one. That the
// document is valid OpenAPI 3.1, and that the API's answers are what it
// says, is local/contract's validator's to hold.
func TestOpenAPIDescribesEveryRouteOfTheTemplate(t *testing.T) {
	doc := openAPI(t)
	tpl, err := template.Load(filepath.Join(projectRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, f := range tpl.Functions {
		for _, r := range f.Routes {
			routes = append(routes, r.Method+" "+r.Path)
		}
	}
	ops := operations(doc)
	slices.Sort(routes)
	if got := sortedKeys(ops); !slices.Equal(got, routes) {
		t.Fatalf("openapi.yaml lacks template.yaml's routes %v and has operations %v that the template does not route", difference(routes, got), difference(got, routes))
	}
	for key, op := range ops {
		hasKey := false
		params, _ := op["parameters"].([]any)
		for _, p := range params {
			if resolve(t, doc, p)["name"] == "Idempotency-Key" {
				hasKey = true
			}
		}
		if want := strings.HasPrefix(key, "POST "); hasKey != want {
			t.Errorf("%s: Idempotency-Key parameter %v, want %v", key, hasKey, want)
		}
	}
}

// TestOpenAPIDescribesEveryProblemTheCodeAnswers holds openapi.yaml's
// problems to the codes the source can answer (see problemCodes): the
// Problem schema's code enum and the examples are exactly those codes;
// each example of a response has that response's status and the type
// ProblemBase + code; every transient answer and every 409 in progress
// carries Retry-After.
func TestOpenAPIDescribesEveryProblemTheCodeAnswers(t *testing.T) {
	doc := openAPI(t)
	want := sortedKeys(problemCodes(t, projectRoot(t)))
	components := doc["components"].(node)
	problem := resolve(t, doc, components["schemas"].(node)["Problem"])
	var enum []string
	for _, c := range problem["properties"].(node)["code"].(node)["enum"].([]any) {
		enum = append(enum, c.(string))
	}
	slices.Sort(enum)
	if !slices.Equal(enum, want) {
		t.Errorf("the Problem schema's code enum lacks %v and has %v, which the code does not answer", difference(want, enum), difference(enum, want))
	}
	inExamples := map[string]bool{}
	for name, ex := range components["examples"].(node) {
		v, _ := resolve(t, doc, ex)["value"].(node)
		code, _ := v["code"].(string)
		if code == "" {
			t.Errorf("example %s has no code", name)
			continue
		}
		inExamples[code] = true
		if v["type"] != ProblemBase+code {
			t.Errorf("example %s: type %v, want %s", name, v["type"], ProblemBase+code)
		}
		for _, m := range []string{"title", "status", "detail"} {
			if v[m] == nil {
				t.Errorf("example %s has no %s", name, m)
			}
		}
	}
	if got := sortedKeys(inExamples); !slices.Equal(got, want) {
		t.Errorf("components.examples lack %v and have %v, which the code does not answer", difference(want, got), difference(got, want))
	}
	for key, op := range operations(doc) {
		for status, r := range op["responses"].(node) {
			resp := resolve(t, doc, r)
			pj, ok := resolve(t, doc, resp["content"])["application/problem+json"].(node)
			if !ok {
				continue
			}
			headers, _ := resp["headers"].(node)
			for name, ex := range pj["examples"].(node) {
				v := resolve(t, doc, ex)["value"].(node)
				if strconv.Itoa(v["status"].(int)) != status {
					t.Errorf("%s %s: example %s has status %v", key, status, name, v["status"])
				}
				retry := v["code"] == "request_in_progress" || status == "502" || status == "503"
				if _, ok := headers["Retry-After"]; retry && !ok {
					t.Errorf("%s %s: %s without Retry-After", key, status, name)
				}
			}
		}
	}
}
