package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/idem"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

type ctl struct {
	t     *testing.T
	db    *dynamodb.Client
	table string
}

func newCtl(t *testing.T) *ctl {
	db := dynamotest.Client(t)
	return &ctl{t: t, db: db, table: dynamotest.Table(t, db, "IdempotencyTable")}
}

// run runs idemctl with args on the test's table; it returns the exit
// code, stdout and stderr.
func (c *ctl) run(args ...string) (int, string, string) {
	var out, errs bytes.Buffer
	dial := func(context.Context, string) (client, error) { return c.db, nil }
	head := []string{args[0], "-table", c.table}
	if args[0] == "lapse" || args[0] == "delete" { // the commands that change a record log who
		head = append(head, "-operator", "ops-alice")
	}
	args = append(head, args[1:]...)
	code := run(context.Background(), args, dial, &out, &errs)
	return code, out.String(), errs.String()
}

func (c *ctl) do(scope, key string, work idem.Work) error {
	s, err := idem.New(c.db, c.table)
	if err != nil {
		c.t.Fatal(err)
	}
	fp, _ := idem.Fingerprint("POST", "/orders", []byte(`{}`), true)
	_, err = s.Do(context.Background(), idem.Request{Scope: scope, Key: key, Fingerprint: fp}, work)
	return err
}

func created(context.Context, *idem.Tx) (idem.Response, error) {
	return idem.Response{StatusCode: 201, Body: []byte(`{"id":"o-1"}`)}, nil
}

func TestShowPrintsTheRecordAndTheBodyOnlyWhenAsked(t *testing.T) {
	c := newCtl(t)
	if err := c.do("alice", "k-1", created); err != nil {
		t.Fatal(err)
	}
	code, out, _ := c.run("show", "-scope", "alice", "-key", "k-1")
	for _, want := range []string{"status:     COMPLETED", "attempts:   1", "stored:     201 (12 bytes)", "key_hash:   " + idem.KeyHash("alice", "k-1")} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("show = %d\n%s\nwant %q", code, out, want)
		}
	}
	if strings.Contains(out, "o-1") {
		t.Fatalf("the body was shown without -body:\n%s", out)
	}
	if _, out, _ := c.run("show", "-scope", "alice", "-key", "k-1", "-body"); !strings.Contains(out, `{"id":"o-1"}`) {
		t.Fatalf("show -body:\n%s", out)
	}
	if code, _, errs := c.run("show", "-scope", "alice", "-key", "nope"); code != 1 || !strings.Contains(errs, "no record") {
		t.Fatalf("unknown key = %d %s", code, errs)
	}
}

func TestLapseAndDeleteAreRefusedOrLoggedAsTheyShouldBe(t *testing.T) {
	c := newCtl(t)
	var inProgress string
	err := c.do("bob", "k-1", func(context.Context, *idem.Tx) (idem.Response, error) {
		_, inProgress, _ = c.run("show", "-scope", "bob", "-key", "k-1")
		code, out, errs := c.run("delete", "-scope", "bob", "-key", "k-1", "-completed", "-reason", "x")
		if code != 1 || !strings.Contains(errs, "in progress; lapse it instead") {
			t.Errorf("delete in progress = %d %s %s", code, out, errs)
		}
		if code, _, errs := c.run("lapse", "-scope", "bob", "-key", "k-1", "-reason", "holder's Lambda timed out"); code != 0 {
			t.Errorf("lapse = %d %s", code, errs)
		}
		return idem.Response{StatusCode: 201}, nil
	})
	if !strings.Contains(inProgress, "status:     IN_PROGRESS") {
		t.Fatalf("show while in progress:\n%s", inProgress)
	}
	// The operator's lapse is the protocol's: it replaced the lease token,
	// so the holder it was told was dead is fenced if it was not, and the
	// request's retry takes the key over at once.
	if !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("the lapsed holder's commit: %v, want ErrLeaseLost", err)
	}
	if err := c.do("bob", "k-1", created); err != nil {
		t.Fatalf("the retry after the lapse: %v", err)
	}
	if code, _, errs := c.run("lapse", "-scope", "bob", "-key", "k-1", "-reason", "again"); code != 1 || !strings.Contains(errs, "completed") ||
		!strings.Contains(errs, `idemctl delete -table `+c.table+` -scope "bob" -key "k-1" -completed -reason`) {
		t.Fatalf("lapse of a completed key = %d %s: want it refused, naming delete -completed", code, errs)
	}
	if code, _, _ := c.run("delete", "-scope", "bob", "-key", "k-1", "-reason", "resend"); code != 2 {
		t.Fatalf("delete without -completed = %d, want 2", code)
	}
	code, _, errs := c.run("delete", "-scope", "bob", "-key", "k-1", "-completed", "-reason", "customer asked to resend")
	if code != 0 {
		t.Fatalf("delete = %d %s", code, errs)
	}
	var line map[string]any
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil {
		t.Fatalf("log %q: %v", errs, err)
	}
	if line["action"] != "delete" || line["reason"] != "customer asked to resend" || line["operator"] != "ops-alice" {
		t.Fatalf("log line %v", line)
	}
	if code, _, _ := c.run("show", "-scope", "bob", "-key", "k-1"); code != 1 {
		t.Fatalf("show after delete = %d, want 1", code)
	}
}

// TestCheckOnTheLocalEngine runs check against DynamoDB Local, which has no
// continuous backups: point-in-time recovery is reported as not supported by
// this engine, neither ok nor FAIL, and the rest of a table as the template
// makes it passes.
func TestCheckOnTheLocalEngine(t *testing.T) {
	c := newCtl(t)
	code, out, _ := c.run("check")
	if code != 0 || !strings.Contains(out, "n/a  point-in-time recovery: not supported by this engine") ||
		!strings.Contains(out, "ok   TTL on expires_at") || !strings.Contains(out, "ok   single Region") || strings.Contains(out, "FAIL") {
		t.Fatalf("check on the local engine = %d\n%s", code, out)
	}
}

// backupsAnswer is a table whose DescribeContinuousBackups answers what the
// test sets; the rest is the local engine's.
type backupsAnswer struct {
	tableAPI
	out *dynamodb.DescribeContinuousBackupsOutput
	err error
}

func (b backupsAnswer) DescribeContinuousBackups(context.Context, *dynamodb.DescribeContinuousBackupsInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeContinuousBackupsOutput, error) {
	return b.out, b.err
}

// TestCheckFlagsWhatTheTableLacks holds check's answer to each thing
// DescribeContinuousBackups can say: recovery on, off, the operation unknown
// to the engine, and any other error.
func TestCheckFlagsWhatTheTableLacks(t *testing.T) {
	c := newCtl(t)
	pitr := func(s types.PointInTimeRecoveryStatus) *dynamodb.DescribeContinuousBackupsOutput {
		return &dynamodb.DescribeContinuousBackupsOutput{ContinuousBackupsDescription: &types.ContinuousBackupsDescription{
			ContinuousBackupsStatus:        types.ContinuousBackupsStatusEnabled,
			PointInTimeRecoveryDescription: &types.PointInTimeRecoveryDescription{PointInTimeRecoveryStatus: s}}}
	}
	for _, tc := range []struct {
		name     string
		answer   backupsAnswer
		code     int
		has, not string
	}{
		{"recovery on", backupsAnswer{out: pitr(types.PointInTimeRecoveryStatusEnabled)}, 0, "ok   point-in-time recovery", "FAIL"},
		{"recovery off", backupsAnswer{out: pitr(types.PointInTimeRecoveryStatusDisabled)}, 1, "FAIL point-in-time recovery: off", "n/a"},
		{"not supported", backupsAnswer{err: &smithy.GenericAPIError{Code: "UnknownOperationException", Message: "An unknown operation was requested."}}, 0,
			"n/a  point-in-time recovery: not supported by this engine", "FAIL"},
		{"another error", backupsAnswer{err: &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "no"}}, 1, "FAIL describe backups: api error AccessDeniedException", "n/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.answer.tableAPI = c.db
			var out bytes.Buffer
			code := check(context.Background(), tc.answer, c.table, &out)
			if code != tc.code || !strings.Contains(out.String(), tc.has) || strings.Contains(out.String(), tc.not) {
				t.Fatalf("check = %d, want %d with %q and without %q:\n%s", code, tc.code, tc.has, tc.not, out.String())
			}
		})
	}
}

func TestCheckFlagsAGlobalTable(t *testing.T) {
	global := &types.TableDescription{
		KeySchema:              []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions:   []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		BillingModeSummary:     &types.BillingModeSummary{BillingMode: types.BillingModePayPerRequest},
		Replicas:               []types.ReplicaDescription{{RegionName: aws.String("us-east-1")}, {RegionName: aws.String("eu-west-1")}},
		MultiRegionConsistency: types.MultiRegionConsistencyEventual,
	}
	var failed []string
	for _, f := range findings(global, nil, nil) {
		if f.problem != "" {
			failed = append(failed, f.what)
		}
	}
	if strings.Join(failed, ",") != "TTL on expires_at,point-in-time recovery,single Region (not a global table)" {
		t.Fatalf("failed %v", failed)
	}
}

// noDial fails the test if idemctl connects: help needs no table.
func noDial(t *testing.T) func(context.Context, string) (client, error) {
	return func(context.Context, string) (client, error) {
		t.Error("idemctl connected to print help")
		return nil, errors.New("no")
	}
}

func TestHelpPrintsTheUsageAndExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {"help"}} {
		var out, errs bytes.Buffer
		code := run(context.Background(), args, noDial(t), &out, &errs)
		if code != 0 || errs.Len() != 0 {
			t.Fatalf("idemctl %v = %d, stderr %q: want 0 and nothing on stderr", args, code, errs.String())
		}
		for _, want := range []string{"idemctl <command> [flags]", "\n  show ", "\n  lapse ", "\n  delete ", "\n  check ", "\n  help ", `"idemctl <command> -h"`, "DYNAMODB_ENDPOINT"} {
			if !strings.Contains(out.String(), want) {
				t.Fatalf("idemctl %v printed\n%s\nwant %q", args, out.String(), want)
			}
		}
		for _, c := range commands {
			if !strings.Contains(out.String(), "\n  "+c.name+" ") || !strings.Contains(out.String(), " "+c.summary+"\n") {
				t.Fatalf("idemctl %v printed\n%s\nwithout the line of %s", args, out.String(), c.name)
			}
		}
	}
}

func TestCommandHelpPrintsItsFlagsAndExitsZero(t *testing.T) {
	cases := []struct {
		cmd      string
		has, not []string
	}{
		{"show", []string{"usage: idemctl show -table T -scope S -key K [-body]", "-table", "-scope", "-key", "-body", "-endpoint"}, []string{"-completed", "-reason"}},
		{"lapse", []string{"usage: idemctl lapse", "-table", "-scope", "-key", "-reason", "-operator"}, []string{"-completed", "-body"}},
		{"delete", []string{"usage: idemctl delete", "-completed", "-reason", "-operator"}, []string{"-body"}},
		{"check", []string{"usage: idemctl check -table T", "-table", "-endpoint"}, []string{"-scope", "-key", "-completed"}},
	}
	for _, tc := range cases {
		for _, args := range [][]string{{tc.cmd, "-h"}, {tc.cmd, "--help"}, {"help", tc.cmd}} {
			var out, errs bytes.Buffer
			code := run(context.Background(), args, noDial(t), &out, &errs)
			if code != 0 || errs.Len() != 0 {
				t.Fatalf("idemctl %v = %d, stderr %q: want 0 and nothing on stderr", args, code, errs.String())
			}
			for _, want := range tc.has {
				if !strings.Contains(out.String(), want) {
					t.Fatalf("idemctl %v printed\n%s\nwant %q", args, out.String(), want)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(out.String(), not+" ") {
					t.Fatalf("idemctl %v printed\n%s\nwith another command's flag %s", args, out.String(), not)
				}
			}
		}
	}
}

func TestMisuseExitsTwoWithTheUsageOnStderr(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "idemctl <command> [flags]"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"show", "-nope"}, "idemctl show: flag provided but not defined: -nope"},
		{[]string{"show", "-completed"}, "idemctl show: flag provided but not defined: -completed"},
		{[]string{"show", "-table", "t", "-scope", "s", "-key", "k", "stray"}, `unexpected argument "stray"`},
		{[]string{"show", "-table", ""}, "-table is required"},
	} {
		var out, errs bytes.Buffer
		code := run(context.Background(), tc.args, noDial(t), &out, &errs)
		if code != 2 || out.Len() != 0 || !strings.Contains(errs.String(), tc.want) || !strings.Contains(errs.String(), "usage") {
			t.Fatalf("idemctl %q = %d, stdout %q, stderr %q: want 2, %q and the usage on stderr", tc.args, code, out.String(), errs.String(), tc.want)
		}
	}
}

// TestMissingCredentialsAreReportedAsSuch runs idemctl's own connect with no
// credentials anywhere: no keys in the environment, no profile, and an
// instance-metadata service that has no role (as on a laptop, or an
// instance without a role) or that is switched off. It must say that no
// credentials were found and how to give some, once, before any record
// call; with keys in the environment the same connect reaches the table.
func TestMissingCredentialsAreReportedAsSuch(t *testing.T) {
	noRole := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			io.WriteString(w, "token")
			return
		}
		http.NotFound(w, r) // /latest/meta-data/iam/security-credentials/: no role
	}))
	defer noRole.Close()
	none := filepath.Join(t.TempDir(), "none")
	clear := func(t *testing.T) {
		for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
			"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
			"AWS_EC2_METADATA_DISABLED"} {
			t.Setenv(v, "")
		}
		t.Setenv("AWS_CONFIG_FILE", none)
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
		t.Setenv("AWS_REGION", "us-east-1")
		t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", noRole.URL)
	}
	c := newCtl(t)
	endpoint := os.Getenv("DYNAMODB_ENDPOINT")
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"instance metadata without a role", nil},
		{"instance metadata switched off", map[string]string{"AWS_EC2_METADATA_DISABLED": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			for _, args := range [][]string{{"show", "-scope", "s", "-key", "k"}, {"check"}} {
				var out, errs bytes.Buffer
				code := run(context.Background(), append(args, "-table", c.table, "-endpoint", endpoint), connect, &out, &errs)
				msg := errs.String()
				if code != 1 || !strings.HasPrefix(msg, "idemctl: no AWS credentials found: ") {
					t.Fatalf("idemctl %v = %d, stderr %q: want 1 and \"no AWS credentials found\"", args, code, msg)
				}
				for _, how := range []string{"AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "aws sso login", "IAM role"} {
					if !strings.Contains(msg, how) {
						t.Fatalf("the message %q does not name %s", msg, how)
					}
				}
				if strings.Contains(msg, "GetItem") || strings.Contains(msg, "DescribeTable") {
					t.Fatalf("the message %q is a table call's error, not the credentials'", msg)
				}
			}
		})
	}
	t.Run("keys in the environment", func(t *testing.T) {
		clear(t)
		t.Setenv("AWS_ACCESS_KEY_ID", "local")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
		var out, errs bytes.Buffer
		code := run(context.Background(), []string{"check", "-table", c.table, "-endpoint", endpoint}, connect, &out, &errs)
		if code != 0 || !strings.Contains(out.String(), "ok   TTL on expires_at") {
			t.Fatalf("check = %d\n%s%s", code, out.String(), errs.String())
		}
	})
}

// TestLapseAndDeleteNeedAnOperator: with $USER unset and no -operator, the
// commands that change a record would log an audit line naming no one, so
// they are refused as a wrong command line (exit 2) and the record is left
// as it was; a blank -operator is no one too.
func TestLapseAndDeleteNeedAnOperator(t *testing.T) {
	c := newCtl(t)
	if err := c.do("carol", "k-1", created); err != nil {
		t.Fatal(err)
	}
	t.Setenv("USER", "")
	for _, args := range [][]string{
		{"lapse", "-table", c.table, "-scope", "carol", "-key", "k-1", "-reason", "x"},
		{"delete", "-table", c.table, "-scope", "carol", "-key", "k-1", "-completed", "-reason", "x"},
		{"delete", "-table", c.table, "-scope", "carol", "-key", "k-1", "-completed", "-reason", "x", "-operator", "  "},
	} {
		var out, errs bytes.Buffer
		dial := func(context.Context, string) (client, error) { return c.db, nil }
		code := run(context.Background(), args, dial, &out, &errs)
		if code != 2 || !strings.Contains(errs.String(), "-operator") || strings.Contains(errs.String(), `"action"`) {
			t.Fatalf("idemctl %q with no operator = %d, stderr %q: want 2, naming -operator, nothing logged", args, code, errs.String())
		}
	}
	if code, out, _ := c.run("show", "-scope", "carol", "-key", "k-1"); code != 0 || !strings.Contains(out, "status:     COMPLETED") {
		t.Fatalf("the record after the refusals = %d\n%s", code, out)
	}
}
