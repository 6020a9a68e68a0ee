package idem_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

// Two Latin-1 user names, as an auth proxy may put them in a header: one
// byte each that is not UTF-8, and otherwise the same.
const (
	latin1Mueller = "m\xfcller"
	latin1Moeller = "m\xf6ller"
)

// TestSDKWritesInvalidUTF8AsReplacement is why a scope must be UTF-8: the
// SDK sends a string attribute as JSON, writing each byte that is not UTF-8
// as U+FFFD, so two partition keys that differ only in such bytes are one
// item on the table. The in-process cache keys the Go string, which keeps
// them apart: the cache and the table would disagree on whose a record is.
func TestSDKWritesInvalidUTF8AsReplacement(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pk := func(scope string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: "7:" + scope + ":k1"}}
	}
	item := pk(latin1Mueller)
	item["owner"] = &types.AttributeValueMemberS{Value: "mueller"}
	if _, err := f.Raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Table), Item: item}); err != nil {
		t.Fatal(err)
	}
	out, err := f.Raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.Table), Key: pk(latin1Moeller), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if str(out.Item, "owner") != "mueller" || str(out.Item, idem.AttrPK) != "7:m\uFFFDller:k1" {
		t.Fatalf("reading %q found %v; the SDK no longer folds invalid UTF-8 into U+FFFD, and this test's reason is gone", latin1Moeller, out.Item)
	}
}

// TestScopeThatIsNotUTF8IsRefused: a scope that is not valid UTF-8 is
// refused with ErrInvalidScope before any call, on every path that takes
// one, so two such scopes never share a record (see the test above).
// Valid UTF-8 scopes that differ in one letter stay apart.
func TestScopeThatIsNotUTF8IsRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, scope := range []string{latin1Mueller, latin1Moeller, "alice\xff", "\xc3"} {
		r := req(scope, "k1", `{}`)
		if _, err := f.Store.Do(ctx, r, ok201(scope)); !errors.Is(err, idem.ErrInvalidScope) {
			t.Fatalf("Do with scope %q: %v, want ErrInvalidScope", scope, err)
		}
		if _, err := f.Store.DoAtomic(ctx, r, ok201(scope)); !errors.Is(err, idem.ErrInvalidScope) {
			t.Fatalf("DoAtomic with scope %q: %v, want ErrInvalidScope", scope, err)
		}
		if _, err := f.Store.Inspect(ctx, scope, "k1"); !errors.Is(err, idem.ErrInvalidScope) {
			t.Fatalf("Inspect with scope %q: %v, want ErrInvalidScope", scope, err)
		}
	}
	if n := f.DB.Total(); n != 0 {
		t.Fatalf("%d DynamoDB calls (%v) for scopes that are refused, want none", n, f.DB.Calls())
	}
	for _, scope := range []string{"müller", "möller"} {
		res, err := f.Store.Do(ctx, req(scope, "k1", `{}`), ok201(scope))
		if err != nil || res.Replayed || string(res.Response.Body) != scope {
			t.Fatalf("Do for %q = %+v, %v; want its own work run", scope, res, err)
		}
	}
}

// TestKeyHashAndDownstreamKeyAreByteExact: what Do refuses, the digests
// still tell apart byte for byte (they hash the bytes, never a string
// attribute), so a log line or a provider's key of one Latin-1 name is
// never another's.
func TestKeyHashAndDownstreamKeyAreByteExact(t *testing.T) {
	if idem.KeyHash(latin1Mueller, "k1") == idem.KeyHash(latin1Moeller, "k1") {
		t.Fatal("two scopes that differ in a byte that is not UTF-8 have one KeyHash")
	}
	if idem.DownstreamKey("charge", latin1Mueller, "k1") == idem.DownstreamKey("charge", latin1Moeller, "k1") {
		t.Fatal("two scopes that differ in a byte that is not UTF-8 have one DownstreamKey")
	}
}
