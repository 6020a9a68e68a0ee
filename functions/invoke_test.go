package functions_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/functions/internal/samlocal"
	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

func TestMain(m *testing.M) {
	code := dynamotest.Main(m)
	if binDir != "" {
		_ = os.RemoveAll(binDir) // best effort: a temporary directory
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// bootstraps builds every function once per test binary (see
// template.Template.Build) and returns the directory holding them.
func bootstraps(t *testing.T, tpl *template.Template) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "bootstraps-"); buildErr == nil {
			buildErr = tpl.Build(binDir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// invocation is what an event file must produce, invoked twice in a row.
type invocation struct {
	fn            string
	first, second int
	replayed      bool   // the second answer carries Idempotent-Replayed
	code          string // the error code of the first answer, if any
	sqs           bool   // an SQS batch: no failures either time, one effect
}

// cases covers every file in events/, in this order: a PUT before the GET
// of the same order.
var cases = []struct {
	file string
	want invocation
}{
	{"charge-create.json", invocation{fn: "charge", first: 201, second: 201, replayed: true}},
	{"charge-declined.json", invocation{fn: "charge", first: 402, second: 402, replayed: true, code: "card_declined"}},
	{"charge-get.json", invocation{fn: "charge", first: 404, second: 404, code: "not_found"}},
	{"order-create.json", invocation{fn: "order", first: 201, second: 201, replayed: true}},
	{"order-put.json", invocation{fn: "order", first: 201, second: 200}},
	{"order-get.json", invocation{fn: "order", first: 200, second: 200}},
	{"order-stats-sqs.json", invocation{fn: "orderstats", sqs: true}},
}

func TestEventFilesUnderTheRuntimeInterfaceEmulator(t *testing.T) {
	path, tpl := load(t)
	root := filepath.Dir(path)
	files, err := filepath.Glob(filepath.Join(root, "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var covered, present []string
	for _, c := range cases {
		covered = append(covered, c.file)
	}
	for _, f := range files {
		present = append(present, filepath.Base(f))
	}
	sort.Strings(covered)
	sort.Strings(present)
	if strings.Join(covered, " ") != strings.Join(present, " ") {
		t.Fatalf("events/ holds %v, the test covers %v", present, covered)
	}
	if testing.Short() {
		t.Skip("every events/ file through the built functions under the Lambda RIE: make test runs it")
	}

	bin := bootstraps(t, tpl)
	emulator, err := rie.Binary(root)
	if err != nil {
		t.Fatal(err)
	}
	sim := provider.New("sk_test_invoke", nil)
	if err := sim.ConfigureSearch(""); err != nil { // PROVIDER_SIM_SEARCH, else an hour behind
		t.Fatal(err)
	}
	api := httptest.NewServer(sim)
	defer api.Close()
	db := dynamotest.Client(t)
	vars := map[string]string{
		dynamo.EndpointEnv:    os.Getenv(dynamo.EndpointEnv),
		"PROVIDER_LOCAL_URL":  api.URL,
		"PROVIDER_SECRET_KEY": "sk_test_invoke",
		// As `sam local invoke -e events/<file>` runs them: the files carry
		// the authorizer's claims, which the functions use as they are.
		samlocal.EnvVar: "true",
	}
	tables, err := template.Tables(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		vars[devstack.RefVar+tb.LogicalID] = dynamotest.Table(t, db, tb.LogicalID)
	}

	runtimes := map[string]*rie.Runtime{}
	for _, fn := range tpl.Functions {
		env, err := devstack.RuntimeEnv(&fn, vars)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(fn.Package)
		rt, err := rie.Start(context.Background(), emulator, fn.Bootstrap(bin), rie.Options{Env: env, Timeout: time.Duration(fn.Timeout) * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Stop()
		runtimes[name] = rt
	}

	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			payload, err := os.ReadFile(filepath.Join(root, "events", c.file))
			if err != nil {
				t.Fatal(err)
			}
			rt := runtimes[c.want.fn]
			if c.want.sqs {
				for i := range 2 {
					out, err := rt.Invoke(context.Background(), payload)
					var resp events.SQSEventResponse
					if err != nil || json.Unmarshal(out, &resp) != nil || len(resp.BatchItemFailures) != 0 {
						t.Fatalf("delivery %d: %s, %v\nlogs:\n%s", i+1, out, err, rt.Logs())
					}
				}
				// The file holds one change in two messages; delivered twice.
				stats, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
					TableName: aws.String(vars[devstack.RefVar+"OrderStatsTable"]),
					Key:       map[string]types.AttributeValue{"scope": &types.AttributeValueMemberS{Value: "user-demo-1"}},
				})
				if err != nil {
					t.Fatal(err)
				}
				if n, _ := stats.Item["order_count"].(*types.AttributeValueMemberN); n == nil || n.Value != "1" {
					t.Fatalf("stats %v: want the order counted once", stats.Item)
				}
				return
			}
			first, second := invoke(t, rt, payload), invoke(t, rt, payload)
			if first.StatusCode != c.want.first || second.StatusCode != c.want.second {
				t.Fatalf("statuses %d then %d, want %d then %d\n%s\nlogs:\n%s", first.StatusCode, second.StatusCode, c.want.first, c.want.second, first.Body, rt.Logs())
			}
			if got := second.Headers[idemlambda.HeaderReplayed] == "true"; got != c.want.replayed {
				t.Fatalf("second answer replayed=%v, want %v", got, c.want.replayed)
			}
			if c.want.replayed && second.Body != first.Body {
				t.Fatalf("replay body %s differs from %s", second.Body, first.Body)
			}
			if c.want.code != "" && !strings.Contains(first.Body, `"code":"`+c.want.code+`"`) {
				t.Fatalf("body %s lacks code %s", first.Body, c.want.code)
			}
			if strings.Contains(rt.Logs(), "UNVERIFIED IDENTITY") {
				t.Fatalf("the event's verified claims were not used as they are:\n%s", rt.Logs())
			}
		})
	}
	// Two charge events with a key each, each invoked twice: two attempts.
	if n := len(sim.Effects()); n != 2 {
		t.Fatalf("provider effects = %d, want one per charge event", n)
	}
}

func invoke(t *testing.T, rt *rie.Runtime, payload []byte) events.APIGatewayV2HTTPResponse {
	t.Helper()
	out, err := rt.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, rt.Logs())
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	return resp
}
