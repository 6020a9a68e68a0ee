package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
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
	args = append([]string{args[0], "-table", c.table, "-operator", "ops-alice"}, args[1:]...)
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
		if code != 1 || !strings.Contains(errs, "not completed") {
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
	if code, _, errs := c.run("lapse", "-scope", "bob", "-key", "k-1", "-reason", "again"); code != 1 || !strings.Contains(errs, "completed") {
		t.Fatalf("lapse of a completed key = %d %s", code, errs)
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
