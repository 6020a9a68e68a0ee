package idem_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// withCookies is a response carrying cookies both ways a handler may set
// them: Response.Cookies, and Set-Cookie headers in any case.
func withCookies(status int, body string) idem.Response {
	return idem.Response{
		StatusCode: status,
		Header:     map[string]string{"Content-Type": "text/plain", "Set-Cookie": "session=s1; HttpOnly", "set-cookie": "theme=dark", "X-Kept": "yes"},
		Cookies:    []string{"session=s1; HttpOnly", "csrf=c1"},
		Body:       []byte(body),
	}
}

// carriesCookies fails unless resp has every cookie withCookies sets.
func carriesCookies(t *testing.T, what string, resp idem.Response) {
	t.Helper()
	if !slices.Equal(resp.Cookies, []string{"session=s1; HttpOnly", "csrf=c1"}) || resp.Header["Set-Cookie"] != "session=s1; HttpOnly" || resp.Header["set-cookie"] != "theme=dark" {
		t.Fatalf("%s = %+v: want the handler's cookies, both ways", what, resp)
	}
}

// noCookies fails if resp carries a cookie either way, or lost a header
// that is not one.
func noCookies(t *testing.T, what string, resp idem.Response) {
	t.Helper()
	if len(resp.Cookies) > 0 || resp.Header["X-Kept"] != "yes" || resp.Header["Content-Type"] != "text/plain" {
		t.Fatalf("%s = %+v: want its headers but no cookies", what, resp)
	}
	for name := range resp.Header {
		if strings.EqualFold(name, "Set-Cookie") {
			t.Fatalf("%s has a %s header: %+v", what, name, resp)
		}
	}
}

// recordHasNoCookies fails unless the stored response holds no cookie.
func (f *fixture) recordHasNoCookies(scope, key string) {
	f.T.Helper()
	resp, ok := f.Record(scope, key)["response"].(*types.AttributeValueMemberM)
	if !ok {
		f.T.Fatalf("no stored response for %s/%s", scope, key)
	}
	if _, ok := resp.Value["cookies"]; ok {
		f.T.Fatalf("the record keeps cookies: %v", resp.Value)
	}
	headers, _ := resp.Value["headers"].(*types.AttributeValueMemberM)
	if headers == nil || len(headers.Value) != 2 {
		f.T.Fatalf("stored headers = %v, want Content-Type and X-Kept alone", resp.Value["headers"])
	}
}

// TestSetCookieIsNeitherStoredNorReplayed: the first answer carries the
// handler's cookies; the record, the cache and every replay do not, on Do
// and DoAtomic, for a 2xx and a stored 4xx alike.
func TestSetCookieIsNeitherStoredNorReplayed(t *testing.T) {
	ctx := context.Background()
	for _, atomic := range []bool{false, true} {
		for _, status := range []int{201, 402} {
			f := newFixture(t, withCache(10, 1<<16))
			do, again := f.Store.Do, f.NewStore().Do
			if atomic {
				do, again = f.Store.DoAtomic, f.NewStore().DoAtomic
			}
			r := req("alice", "k1", `{}`)
			work := func(context.Context, *idem.Tx) (idem.Response, error) { return withCookies(status, "first"), nil }
			first, err := do(ctx, r, work)
			if err != nil || first.Replayed {
				t.Fatalf("first = %+v, %v", first, err)
			}
			carriesCookies(t, "the first answer", first.Response)
			f.recordHasNoCookies("alice", "k1")
			f.DB.Reset()
			cached, err := do(ctx, r, work)
			if err != nil || !cached.Replayed || f.DB.Total() != 0 {
				t.Fatalf("replay from the cache = %+v, %v with %v calls", cached, err, f.DB.Calls())
			}
			noCookies(t, "a replay from the cache", cached.Response)
			stored, err := again(ctx, r, work)
			if err != nil || !stored.Replayed || string(stored.Response.Body) != "first" || stored.Response.StatusCode != status {
				t.Fatalf("replay from the table = %+v, %v", stored, err)
			}
			noCookies(t, "a replay from the table", stored.Response)
		}
	}
}

// TestAConflictsCookiesAreNotStored: the response a ConflictFunc decides is
// stored like any other, without its cookies, which its first answer
// carries.
func TestAConflictsCookiesAreNotStored(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.Store.Do(ctx, req("alice", "k0", `{}`), f.createOrder("alice", "o1", nil)); err != nil {
		t.Fatal(err)
	}
	work := func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		tx.Add(f.OrderPut("alice", "o1", "again"), func(map[string]types.AttributeValue) (idem.Response, error) {
			return withCookies(409, "taken"), nil
		})
		return idem.Response{StatusCode: 201}, nil
	}
	r := req("alice", "k1", `{}`)
	first, err := f.Store.Do(ctx, r, work)
	if err != nil || string(first.Response.Body) != "taken" {
		t.Fatalf("first = %+v, %v; want the conflict's answer", first, err)
	}
	carriesCookies(t, "the conflict's first answer", first.Response)
	f.recordHasNoCookies("alice", "k1")
	again, err := f.NewStore().Do(ctx, r, work)
	if err != nil || !again.Replayed {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	noCookies(t, "the conflict's replay", again.Response)
}

// TestTheFirstAnswerKeepsItsCookiesWhenTheCommitsAnswerWasLost: a commit
// that landed and lost its answer is read back from the record, which has
// no cookies: the first answer still carries the handler's, on the put of
// a commit without business writes (resent by the SDK), a transaction
// whose every answer was lost (settled by the lapse), and DoAtomic's (by
// the hand-back).
func TestTheFirstAnswerKeepsItsCookiesWhenTheCommitsAnswerWasLost(t *testing.T) {
	cases := []struct {
		name   string
		atomic bool
		writes bool
		fault  faultproxy.Fault
	}{
		{"Do's put", false, false, faultproxy.Fault{Op: "PutItem", Kind: faultproxy.CommitThenDrop, Times: 1, Skip: 1}},
		{"Do's transaction", false, true, faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.CommitThenDrop, Times: 3}},
		{"DoAtomic's transaction", true, true, faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.CommitThenDrop, Times: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			proxy, store := f.proxied()
			proxy.Inject(tc.fault)
			do := store.Do
			if tc.atomic {
				do = store.DoAtomic
			}
			res, err := do(context.Background(), req("alice", "k1", `{}`), func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				if tc.writes {
					tx.Add(f.OrderPut("alice", "o1", "first"), nil)
				}
				return withCookies(201, "first"), nil
			})
			mustInject(t, proxy, faultproxy.CommitThenDrop, tc.fault.Times)
			if err != nil || res.Replayed {
				t.Fatalf("Do = %+v, %v; want the committed answer", res, err)
			}
			carriesCookies(t, "the first answer read back", res.Response)
			f.recordHasNoCookies("alice", "k1")
		})
	}
}

// TestARecordsOldCookiesAreNotReplayed: a record an earlier version stored
// with its cookies (a cookies attribute, a Set-Cookie header) is replayed
// without them.
func TestARecordsOldCookiesAreNotReplayed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := req("alice", "k1", `{}`)
	work := func(context.Context, *idem.Tx) (idem.Response, error) { return withCookies(201, "first"), nil }
	if _, err := f.Store.Do(ctx, r, work); err != nil {
		t.Fatal(err)
	}
	_, err := f.Raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(f.Table),
		Key:                      map[string]types.AttributeValue{idem.AttrPK: &types.AttributeValueMemberS{Value: "5:alice:k1"}},
		UpdateExpression:         aws.String("SET #r.cookies = :c, #r.headers.#sc = :s"),
		ExpressionAttributeNames: map[string]string{"#r": "response", "#sc": "Set-Cookie"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "session=old"}}},
			":s": &types.AttributeValueMemberS{Value: "session=old"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.NewStore(withCache(10, 1<<16)).Do(ctx, r, work)
	if err != nil || !res.Replayed {
		t.Fatalf("replay = %+v, %v", res, err)
	}
	noCookies(t, "the replay of an old record", res.Response)
	rec, err := f.Store.Inspect(ctx, "alice", "k1")
	if err != nil || rec.Response == nil {
		t.Fatal(rec, err)
	}
	noCookies(t, "Inspect's stored response", *rec.Response)
}
