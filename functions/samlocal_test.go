package functions_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/functions/internal/samlocal"
	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/samenv"
	"github.com/idemkeys/idem/local/template"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// samEnv is the environment the SAM CLI gives fn's container, as its
// samcli/local/lambdafn/env_vars.py resolves it: its own AWS_* variables
// (AWS_SAM_LOCAL=true among them), then each variable the template
// declares, at the env-vars file's value for the function, else the file's
// "Parameters", else the template's. A variable the template does not
// declare never reaches the function, whatever the file says.
func samEnv(fn *template.Function, file map[string]map[string]string, samLocal bool) []string {
	env := []string{"AWS_REGION=" + dynamo.Region, "AWS_DEFAULT_REGION=" + dynamo.Region,
		"AWS_ACCESS_KEY_ID=defaultkey", "AWS_SECRET_ACCESS_KEY=defaultsecret"}
	if samLocal {
		env = append(env, samlocal.EnvVar+"=true")
	}
	for k, v := range fn.Env {
		if strings.HasPrefix(v, template.RefPrefix) {
			v = "" // an intrinsic the SAM CLI cannot resolve is blank
		}
		if p, ok := file["Parameters"][k]; ok {
			v = p
		}
		if f, ok := file[fn.LogicalID][k]; ok {
			v = f
		}
		env = append(env, k+"="+v)
	}
	return env
}

// samStartAPIEvent is POST /charges as sam local start-api hands it to the
// function (samcli/local/apigw/event_constructor.py): payload 2.0, header
// names as the client sent them plus X-Forwarded-*, no
// requestContext.authorizer, since it skips JWT authorizers.
func samStartAPIEvent(token, key, body string) []byte {
	ev := map[string]any{
		"version": "2.0", "routeKey": "POST /charges", "rawPath": "/charges", "rawQueryString": "",
		"cookies": []string{},
		"headers": map[string]string{
			"Host": "127.0.0.1:3000", "User-Agent": "curl/8.5.0", "Accept": "*/*",
			"Authorization": "Bearer " + token, "Idempotency-Key": key,
			"Content-Type": "application/json", "Content-Length": "64",
			"X-Forwarded-Proto": "http", "X-Forwarded-Port": "3000",
		},
		"queryStringParameters": map[string]string{},
		"requestContext": map[string]any{
			"accountId": "123456789012", "apiId": "1234567890", "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
			"routeKey": "POST /charges", "stage": "$default", "time": "02/Dec/2026:12:00:00 +0000", "timeEpoch": 1796212800000,
			"http": map[string]string{"method": "POST", "path": "/charges", "protocol": "HTTP/1.1", "sourceIp": "172.17.0.1", "userAgent": "Custom User Agent String"},
		},
		"body": body, "pathParameters": map[string]string{}, "isBase64Encoded": false, "stageVariables": nil,
	}
	b, _ := json.Marshal(ev)
	return b
}

// What `make sam-local-env` and `sam local start-api` would do with the
// README's curl line, without Docker: the services and the env-vars file
// as samenv makes them, the charge's bootstrap under the Runtime Interface
// Emulator with the environment SAM would give it, and the event SAM would
// build, with a dev token and no authorizer claims. Under AWS_SAM_LOCAL the
// second call replays the first and the provider charges once; without it,
// the same event is refused with 401.
func TestSAMLocalStartAPIEventUnderTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("the charge built and run under the Lambda RIE as sam local start-api runs it: make test runs it")
	}
	path, tpl := load(t)
	root := filepath.Dir(path)
	svc, err := samenv.Start(context.Background(), samenv.Options{Root: root, Bind: "127.0.0.1", Host: "127.0.0.1", TablePrefix: "samtest-"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	envPath := filepath.Join(t.TempDir(), "sam-env.json")
	if err := samenv.Write(envPath, svc.EnvVars); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(envPath)
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]map[string]string
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	fn, err := tpl.Function("ChargeFunction")
	if err != nil {
		t.Fatal(err)
	}
	bin := bootstraps(t, tpl)
	emulator, err := rie.Binary(root)
	if err != nil {
		t.Fatal(err)
	}
	auth := &apigw.Authorizer{Secret: []byte("make sam-local-env's own key"), Issuer: "https://issuer.local.invalid", Audience: "idem-local"}
	token, err := auth.Token("user-sam-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	event := samStartAPIEvent(token, "sam-demo-1", `{"amount":1050,"currency":"usd","payment_method":"pm_card_visa"}`)

	sam, err := rie.Start(context.Background(), emulator, fn.Bootstrap(bin), rie.Options{Env: samEnv(fn, file, true)})
	if err != nil {
		t.Fatal(err)
	}
	defer sam.Stop()
	first, second := invoke(t, sam, event), invoke(t, sam, event)
	if first.StatusCode != 201 || second.StatusCode != 201 || second.Headers[idemlambda.HeaderReplayed] != "true" || second.Body != first.Body {
		t.Fatalf("under the SAM CLI: %d %s, then %d (replayed %q) %s\nlogs:\n%s", first.StatusCode, first.Body, second.StatusCode, second.Headers[idemlambda.HeaderReplayed], second.Body, sam.Logs())
	}
	if n := len(svc.Sim.Effects()); n != 1 {
		t.Fatalf("provider effects = %d, want one charge", n)
	}
	if n := strings.Count(sam.Logs(), "UNVERIFIED IDENTITY"); n != 1 {
		t.Fatalf("the unverified-identity warning was logged %d times, want once\n%s", n, sam.Logs())
	}

	deployed, err := rie.Start(context.Background(), emulator, fn.Bootstrap(bin), rie.Options{Env: samEnv(fn, file, false)})
	if err != nil {
		t.Fatal(err)
	}
	defer deployed.Stop()
	if resp := invoke(t, deployed, event); resp.StatusCode != 401 || !strings.Contains(resp.Body, `"unauthenticated"`) {
		t.Fatalf("without %s: %d %s, want 401 unauthenticated", samlocal.EnvVar, resp.StatusCode, resp.Body)
	}
	if n := len(svc.Sim.Effects()); n != 1 {
		t.Fatalf("provider effects = %d after the refused call, want still one", n)
	}
}

// The env-vars file sets, for each function, only variables the template
// declares for it (the SAM CLI drops the others), and among them the local
// ones: the engine, the short lease and, for the charge, the provider. The
// local-only variables are empty when deployed.
func TestSAMEnvVarsAreDeclaredAndEmptyWhenDeployed(t *testing.T) {
	_, tpl := load(t)
	local := map[string]string{dynamo.EndpointEnv: "http://h:1", "IDEM_LEASE": "3s", "PROVIDER_LOCAL_URL": "http://h:2", "PROVIDER_SECRET_KEY": "sk_test_local"}
	tables := map[string]string{}
	for _, id := range []string{"IdempotencyTable", "ChargesTable", "AttemptsTable", "OrdersTable", "OrderStatsTable"} {
		tables[id] = "sam-" + id
	}
	vars, err := samenv.EnvVars(tpl, tables, local)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range tpl.Functions {
		got := vars[fn.LogicalID]
		for k := range got {
			if _, declared := fn.Env[k]; !declared {
				t.Errorf("%s: the file sets %s, which the template does not declare", fn.LogicalID, k)
			}
		}
		want := []string{dynamo.EndpointEnv, "IDEM_LEASE"}
		if fn.LogicalID == "ChargeFunction" {
			want = append(want, "PROVIDER_LOCAL_URL", "PROVIDER_SECRET_KEY")
		}
		for _, k := range want {
			if got[k] != local[k] {
				t.Errorf("%s: %s=%q in the file, want %q", fn.LogicalID, k, got[k], local[k])
			}
			if fn.Env[k] != "" {
				t.Errorf("%s: %s=%q in the template, want it empty when deployed", fn.LogicalID, k, fn.Env[k])
			}
		}
	}
}
