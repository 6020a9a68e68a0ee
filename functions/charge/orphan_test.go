package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// No charge is orphaned, end to end: the provider
// charged, then every answer timed out, so the work failed. The key stays
// bound to the request (its lease lapsed, not deleted): another body under
// it gets 422 and never reaches the provider, and the original request's
// retry gets 201 with the original charge, one charge at the provider and
// one charge record. Were the failure to delete the record instead, the
// other body would bind the key, its 422 from the provider would be stored,
// and the original request's retries would get that 422 forever: the
// customer charged, and no record of it.
func TestChargedThenTimedOutIsNeverOrphaned(t *testing.T) {
	f := newFixture(t)
	// Every attempt the payments client makes (stripe-go retries too) charges or
	// replays, then loses its answer.
	f.sim.Inject(provider.Fault{Kind: provider.DropAfterEffect, Times: 20})
	failed := f.call("POST", "/charges", "alice", "k-1", visa)
	if failed.StatusCode < 500 || failed.Headers["Retry-After"] == "" {
		t.Fatalf("first attempt = %d %s, want a 5xx with Retry-After", failed.StatusCode, failed.Body)
	}
	f.sim.ClearFaults()
	effects := f.sim.Effects()
	if len(effects) != 1 {
		t.Fatalf("provider effects after the timeout = %d, want 1 (charged, answer lost)", len(effects))
	}

	other := f.call("POST", "/charges", "alice", "k-1", strings.Replace(visa, "1050", "9999", 1))
	if other.StatusCode != 422 || errorCode(t, other) != "idempotency_key_reused" {
		t.Fatalf("another body under the key = %d %s, want 422", other.StatusCode, other.Body)
	}

	retry := f.call("POST", "/charges", "alice", "k-1", visa)
	var ch charge
	if err := json.Unmarshal([]byte(retry.Body), &ch); err != nil || retry.StatusCode != 201 || retry.Headers[idemlambda.HeaderReplayed] != "" {
		t.Fatalf("the original request's retry = %d %s, want a fresh 201", retry.StatusCode, retry.Body)
	}
	if effects = f.sim.Effects(); len(effects) != 1 || effects[0].PaymentIntentID != ch.ID {
		t.Fatalf("provider effects = %+v, charge %s: want the one charge, answered", effects, ch.ID)
	}
	if n := f.charges(); n != 1 {
		t.Fatalf("charge records = %d, want 1", n)
	}
	replay := f.call("POST", "/charges", "alice", "k-1", visa)
	if replay.StatusCode != 201 || replay.Body != retry.Body || replay.Headers[idemlambda.HeaderReplayed] != "true" {
		t.Fatalf("replay = %d %s, want the charge replayed", replay.StatusCode, replay.Body)
	}
}

// vanishing is the function's client under a holder whose idempotency
// record is deleted by hand while the charge works (bypassing idemctl,
// which refuses a key in progress): each commit meets no record.
type vanishing struct {
	*dynamodb.Client
	raw          *dynamodb.Client
	table, scope string
	key          string
}

func (v vanishing) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	pk := strconv.Itoa(len(v.scope)) + ":" + v.scope + ":" + v.key
	if _, err := v.raw.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(v.table),
		Key: map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: pk}}}); err != nil {
		return nil, err
	}
	return v.Client.TransactWriteItems(ctx, in, o...)
}

// A record deleted under its holder fences the holder's commit: the
// commit, finding no record, reads the key once (the one read of the
// idempotency table a charge may make), commits nothing and answers no
// success; the request's retry then finds the charge the provider made,
// and records it once.
func TestARecordDeletedUnderItsHolderFencesItsCommit(t *testing.T) {
	f := newFixture(t)
	healthy := f.server.store
	gone, err := idem.New(vanishing{Client: f.fn, raw: f.raw, table: f.tables[0], scope: "alice", key: "k-1"}, f.tables[0], func(o *idem.Options) { o.Clock = f.clock.now })
	if err != nil {
		t.Fatal(err)
	}
	f.server.store = gone
	f.Handle = f.server.routes()
	if first := f.call("POST", "/charges", "alice", "k-1", visa); first.StatusCode < 400 {
		t.Fatalf("first = %d %s, want no success for a commit that did not land", first.StatusCode, first.Body)
	}
	if n := f.charges(); n != 0 {
		t.Fatalf("%d charge records after a fenced commit, want none", n)
	}
	f.server.store = healthy
	f.Handle = f.server.routes()
	retry := f.call("POST", "/charges", "alice", "k-1", visa)
	effects := f.sim.Effects()
	if retry.StatusCode != 201 || len(effects) != 1 || charged(t, retry).ID != effects[0].PaymentIntentID || f.charges() != 1 {
		t.Fatalf("retry = %d %s, effects %+v, %d records: want the one charge, recorded once", retry.StatusCode, retry.Body, effects, f.charges())
	}
}
