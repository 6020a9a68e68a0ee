package apitest

import (
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/template"
)

// Main runs the tests of a function's package on a local engine
// (dynamotest.Main), then holds the function's role in template.yaml to
// the DynamoDB calls those tests made through calls (every client the
// function's code is handed is made with calls as its HTTP client; the
// tests' own setup and checks use another): least privilege from the code,
// not from a list written by hand. Once every test ran (no -run, no -skip)
// and passed, the role must grant exactly the actions called, table by
// table; when only some ran, every action they called must still be
// granted. A difference fails the package, named.
func Main(m *testing.M, function string, calls *dynamotest.Actions) int {
	code := dynamotest.Main(m)
	if code != 0 {
		return code
	}
	every := flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == ""
	problems, err := RoleProblems(function, calls.Needed(), every)
	if err != nil {
		problems = []string{err.Error()}
	}
	for _, p := range problems {
		fmt.Println("--- FAIL: least privilege:", p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}

// RoleProblems compares the DynamoDB actions function's role grants on the
// template's tables with needed (dynamotest.Actions.Needed): an action
// needed and not granted is a problem always, one granted and never
// needed only when every test ran (every).
func RoleProblems(function string, needed map[string][]string, every bool) ([]string, error) {
	tpl, err := template.Project()
	if err != nil {
		return nil, err
	}
	fn, err := tpl.Function(function)
	if err != nil {
		return nil, err
	}
	granted := map[string][]string{}
	for _, st := range fn.Policies {
		for _, r := range st.Resources {
			table, ok := strings.CutPrefix(r, template.GetAttPrefix)
			if !ok || !strings.HasSuffix(table, ".Arn") {
				continue // not a table's own ARN (a stream's, a queue's)
			}
			for _, a := range st.Actions {
				if strings.HasPrefix(a, "dynamodb:") {
					granted[strings.TrimSuffix(table, ".Arn")] = append(granted[strings.TrimSuffix(table, ".Arn")], a)
				}
			}
		}
	}
	var problems []string
	for _, table := range keys(needed, granted) {
		for _, a := range needed[table] {
			if !slices.Contains(granted[table], a) {
				problems = append(problems, fmt.Sprintf("the tests of %s call %s on %s, which its role does not grant", function, a, table))
			}
		}
		for _, a := range granted[table] {
			if every && !slices.Contains(needed[table], a) {
				problems = append(problems, fmt.Sprintf("%s's role grants %s on %s, which none of its tests calls", function, a, table))
			}
		}
	}
	return problems, nil
}

func keys(maps ...map[string][]string) []string {
	var out []string
	for _, m := range maps {
		for k := range m {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
