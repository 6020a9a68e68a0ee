package idem_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
)

// The conditions the code sends and the guards the model checks are two
// texts; model/conditions.txt is the table both are held to, term by term.

const (
	condTablePath = "model/conditions.txt"
	modelPath     = "model/idem.pml"
)

// sentWrite is one conditioned write to the idempotency table, as sent.
type sentWrite struct {
	op     string
	cond   string
	names  map[string]string
	values map[string]types.AttributeValue
	item   map[string]types.AttributeValue // a put's item
	before string                          // the record's lease token just before it was sent
}

// condRecorder is a DynamoDBAPI on DynamoDB Local that keeps every conditioned
// write to the idempotency table, and can lose the answer to one of them
// (the n-th, from 1) after it landed.
type condRecorder struct {
	idem.DynamoDBAPI
	table string
	mu    sync.Mutex
	sent  []sentWrite
	lose  int
}

var errAnswerLost = errors.New("conditions test: the call landed, its answer was lost")

// note keeps w, with the lease token of the record it is sent to (pk), and
// reports whether its answer is to be lost.
func (r *condRecorder) note(ctx context.Context, pk types.AttributeValue, w sentWrite) bool {
	out, err := r.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &r.table, Key: map[string]types.AttributeValue{idem.AttrPK: pk}, ConsistentRead: aws.Bool(true),
	})
	if err == nil {
		w.before = itemString(out.Item, "lease_token")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, w)
	return len(r.sent) == r.lose
}

func (r *condRecorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	lose := r.note(ctx, in.Item[idem.AttrPK], sentWrite{op: "PutItem", cond: aws.ToString(in.ConditionExpression), names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues, item: in.Item})
	out, err := r.DynamoDBAPI.PutItem(ctx, in, o...)
	if err == nil && lose {
		return nil, errAnswerLost
	}
	return out, err
}

func (r *condRecorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	lose := r.note(ctx, in.Key[idem.AttrPK], sentWrite{op: "UpdateItem", cond: aws.ToString(in.ConditionExpression), names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues})
	out, err := r.DynamoDBAPI.UpdateItem(ctx, in, o...)
	if err == nil && lose {
		return nil, errAnswerLost
	}
	return out, err
}

// TransactWriteItems keeps the action on the idempotency table (the
// record's put, or the operator's delete); the business writes are the
// caller's.
func (r *condRecorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	lose := false
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil && aws.ToString(it.Put.TableName) == r.table:
			p := it.Put
			lose = r.note(ctx, p.Item[idem.AttrPK], sentWrite{op: "TransactWriteItems", cond: aws.ToString(p.ConditionExpression), names: p.ExpressionAttributeNames, values: p.ExpressionAttributeValues, item: p.Item})
		case it.Delete != nil && aws.ToString(it.Delete.TableName) == r.table:
			d := it.Delete
			lose = r.note(ctx, d.Key[idem.AttrPK], sentWrite{op: "TransactWriteItems", cond: aws.ToString(d.ConditionExpression), names: d.ExpressionAttributeNames, values: d.ExpressionAttributeValues})
		case it.Update != nil && aws.ToString(it.Update.TableName) == r.table, it.ConditionCheck != nil && aws.ToString(it.ConditionCheck.TableName) == r.table:
			return nil, fmt.Errorf("conditions test: an action on the idempotency table that the table does not list: %+v", it)
		}
	}
	out, err := r.DynamoDBAPI.TransactWriteItems(ctx, in, o...)
	if err == nil && lose {
		return nil, errAnswerLost
	}
	return out, err
}

// condScenario is a path of calls that sends the writes named in want, in
// that order: each write's condition is then held to the table's. (A
// retry's first write is a fresh claim: it has seen no record yet. Its
// failed condition returns the record, which the takeover then names.)
type condScenario struct {
	name string
	lose int      // the write whose answer is lost, from 1; 0: none
	want []string // the table's condition of each write sent
	run  func(ctx context.Context, s *idem.Store, r idem.Request) error
}

var condScenarios = []condScenario{
	{"a claim and its commit", 0, []string{"claim", "commit"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		return done(s.Do(ctx, r, ok201(`{}`)))
	}},
	{"a commit with a business write", 0, []string{"claim", "commit"}, nil}, // run set in TestConditionsSentAreTheTable: it needs the fixture
	{"a work error's lapse, the retry's takeover", 0, []string{"claim", "lapse", "claim", "takeover", "commit"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		if _, err := s.Do(ctx, r, failing); !errors.Is(err, errWork) {
			return fmt.Errorf("the failing work: %v", err)
		}
		return done(s.Do(ctx, r, ok201(`{}`)))
	}},
	{"a claim whose answer was lost, handed back", 1, []string{"claim", "handback"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		return refused(s.Do(ctx, r, ok201(`{}`)))
	}},
	{"a takeover whose answer was lost, handed back", 4, []string{"claim", "lapse", "claim", "takeover", "handback-takeover"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		if _, err := s.Do(ctx, r, failing); !errors.Is(err, errWork) {
			return fmt.Errorf("the failing work: %v", err)
		}
		return refused(s.Do(ctx, r, ok201(`{}`)))
	}},
	{"a commit whose answer was lost, settled", 2, []string{"claim", "commit", "settle"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		return done(s.Do(ctx, r, ok201(`{}`)))
	}},
	{"DoAtomic's commit", 0, []string{"atomic-commit"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		return done(s.DoAtomic(ctx, r, ok201(`{}`)))
	}},
	{"DoAtomic's takeover of Do's lapse", 0, []string{"claim", "lapse", "atomic-commit", "atomic-takeover"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		if _, err := s.Do(ctx, r, failing); !errors.Is(err, errWork) {
			return fmt.Errorf("the failing work: %v", err)
		}
		return done(s.DoAtomic(ctx, r, ok201(`{}`)))
	}},
	{"DoAtomic's commit whose answer was lost, settled", 1, []string{"atomic-commit", "atomic-settle"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		return done(s.DoAtomic(ctx, r, ok201(`{}`)))
	}},
	{"DoAtomic's takeover whose answer was lost, settled", 4, []string{"claim", "lapse", "atomic-commit", "atomic-takeover", "atomic-settle-takeover"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		if _, err := s.Do(ctx, r, failing); !errors.Is(err, errWork) {
			return fmt.Errorf("the failing work: %v", err)
		}
		return done(s.DoAtomic(ctx, r, ok201(`{}`)))
	}},
	{"the operator's lapse of a live holder, fencing its commit", 0, []string{"claim", "operator-lapse", "commit"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		_, err := s.Do(ctx, r, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			rec, err := s.Inspect(ctx, r.Scope, r.Key)
			if err == nil {
				err = s.Lapse(ctx, rec, "conditions test")
			}
			return idem.Response{StatusCode: 201}, err
		})
		if !errors.Is(err, idem.ErrLeaseLost) {
			return fmt.Errorf("the lapsed holder: %v, want ErrLeaseLost", err)
		}
		return nil
	}},
	{"the operator's delete", 0, []string{"claim", "commit", "delete"}, func(ctx context.Context, s *idem.Store, r idem.Request) error {
		if err := done(s.Do(ctx, r, ok201(`{}`))); err != nil {
			return err
		}
		rec, err := s.Inspect(ctx, r.Scope, r.Key)
		if err != nil {
			return err
		}
		return s.Delete(ctx, rec, "conditions test")
	}},
}

var errWork = errors.New("conditions test: the work failed")

func failing(context.Context, *idem.Tx) (idem.Response, error) { return idem.Response{}, errWork }

func done(res idem.Result, err error) error {
	if err != nil || res.Response.StatusCode != 201 {
		return fmt.Errorf("got %+v, %v; want the 201", res, err)
	}
	return nil
}

func refused(_ idem.Result, err error) error {
	if err == nil {
		return errors.New("a call whose claim's answer was lost succeeded")
	}
	return nil
}

// TestConditionsSentAreTheTable sends every conditioned write of the
// protocol on DynamoDB Local, through a client that records them, and
// holds each write's ConditionExpression to model/conditions.txt, term by
// term, and each value it binds to the table's meaning of it.
func TestConditionsSentAreTheTable(t *testing.T) {
	table, err := readCondTable(condTablePath)
	if err != nil {
		t.Fatal(err)
	}
	for v, meaning := range table.values {
		if _, err := (valueRoles{}).value(v); err != nil {
			t.Errorf("%s: value %s (%s): %v", condTablePath, v, meaning, err)
		}
	}
	f := newFixture(t)
	scenarios := slices.Clone(condScenarios)
	scenarios[1].run = func(ctx context.Context, s *idem.Store, r idem.Request) error {
		return done(s.Do(ctx, r, f.createOrder(r.Scope, "o-"+r.Key, nil)))
	}
	seen := map[string]bool{}
	for i, sc := range scenarios {
		rec := &condRecorder{DynamoDBAPI: f.Raw, table: f.Table, lose: sc.lose}
		s, err := idem.New(rec, f.Table, func(o *idem.Options) { o.Clock = f.Clock.Now })
		if err != nil {
			t.Fatal(err)
		}
		r := req("alice", "cond-"+strconv.Itoa(i), `{}`)
		if err := sc.run(context.Background(), s, r); err != nil {
			t.Errorf("%s: %v", sc.name, err)
			continue
		}
		if len(rec.sent) != len(sc.want) {
			t.Errorf("%s: %d conditioned writes sent, want %d (%s):\n%s", sc.name, len(rec.sent), len(sc.want), strings.Join(sc.want, ", "), sentText(rec.sent))
			continue
		}
		roles := valueRoles{fp: r.Fingerprint, now: f.Clock.Now()}
		for j, w := range rec.sent {
			name := sc.want[j]
			seen[name] = true
			if slices.Contains(takingLease, name) {
				roles.mine = itemString(w.item, "lease_token") // the lease this write takes
			}
			if name == "takeover" || name == "atomic-takeover" {
				roles.seen = w.before // the lapsed lease it takes over
			}
			if err := checkSent(table, name, w, roles); err != nil {
				t.Errorf("%s, write %d (%s): %v", sc.name, j+1, name, err)
			}
		}
	}
	for _, c := range table.conditions {
		if !seen[c.name] {
			t.Errorf("%s:%d: condition %s is sent by no scenario of this test", condTablePath, c.line, c.name)
		}
	}
}

// takingLease are the writes that take the key with a new lease token: the
// later writes of a scenario act for that lease.
var takingLease = []string{"claim", "takeover", "atomic-commit", "atomic-takeover"}

// valueRoles are what the table's values are bound to in one scenario, so
// far: the request's fingerprint, the lease the last claim took and the
// lapsed lease the last takeover took over, the Store's time.
type valueRoles struct {
	fp, mine, seen string
	now            time.Time
}

var placeholder = regexp.MustCompile(`:\w+`)

// checkSent holds one write to the table's condition name: its terms, then
// the values its condition binds.
func checkSent(table *condTable, name string, w sentWrite, roles valueRoles) error {
	c := table.condition(name)
	if c == nil {
		return fmt.Errorf("%s has no condition %s", condTablePath, name)
	}
	got, err := parseBool(w.cond, dynamoSyntax, resolveNames(w.names))
	if err != nil {
		return err
	}
	if !slices.EqualFunc(got, c.dynamo, slices.Equal) {
		return fmt.Errorf("the code sends\n\t%s\nas\n\t%s\nand %s:%d says\n\t%s", w.cond, got, condTablePath, c.line, c.dynamo)
	}
	for _, v := range placeholder.FindAllString(w.cond, -1) {
		if _, ok := table.values[v]; !ok {
			return fmt.Errorf("value %s has no meaning in %s", v, condTablePath)
		}
		want, err := roles.value(v)
		if err != nil {
			return err
		}
		if got := attrText(w.values[v]); got != want {
			return fmt.Errorf("value %s (%s) is %q, want %q", v, table.values[v], got, want)
		}
	}
	return nil
}

// value is what placeholder v must be bound to: the table's meaning of it.
func (r valueRoles) value(v string) (string, error) {
	switch v {
	case ":in_progress":
		return "IN_PROGRESS", nil
	case ":completed":
		return "COMPLETED", nil
	case ":mine":
		return r.mine, nil
	case ":fp":
		return r.fp, nil
	case ":now_s":
		return strconv.FormatInt(r.now.Unix(), 10), nil
	case ":now_ms":
		return strconv.FormatInt(r.now.UnixMilli(), 10), nil
	case ":seen":
		return r.seen, nil
	}
	return "", fmt.Errorf("this test knows no meaning of %s", v)
}

var attrName = regexp.MustCompile(`#\w+`)

// resolveNames replaces each #name in an atom with the attribute it names.
func resolveNames(names map[string]string) func(string) string {
	return func(atom string) string {
		return attrName.ReplaceAllStringFunc(atom, func(n string) string {
			if a, ok := names[n]; ok {
				return a
			}
			return n
		})
	}
}

func attrText(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	}
	return fmt.Sprintf("%T", v)
}

func itemString(item map[string]types.AttributeValue, name string) string {
	v, _ := item[name].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

func sentText(sent []sentWrite) string {
	var b strings.Builder
	for _, w := range sent {
		fmt.Fprintf(&b, "\t%s %q\n", w.op, w.cond)
	}
	return b.String()
}

// TestConditionsModelledAreTheTable holds idem.pml's marked guards to
// model/conditions.txt, term by term: each condition's guard (with its
// literal set, where the table names one) is the table's model column, and
// each model term with no DynamoDB term is one the guard's other
// disjunctions make redundant.
func TestConditionsModelledAreTheTable(t *testing.T) {
	table, err := readCondTable(condTablePath)
	if err != nil {
		t.Fatal(err)
	}
	guards, err := modelGuards(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, c := range table.conditions {
		g, ok := guards[c.guard]
		if !ok {
			t.Errorf("%s:%d: condition %s: %s marks no guard %s", condTablePath, c.line, c.name, modelPath, c.guard)
			continue
		}
		used[c.guard] = true
		guard := c.guard
		if c.assume != "" {
			g, guard = assume(g, c.assume), guard+" with "+c.assume
		}
		if !slices.EqualFunc(g, c.model, slices.Equal) {
			t.Errorf("condition %s: %s's guard %s is\n\t%s\nand %s:%d says\n\t%s", c.name, modelPath, guard, g, condTablePath, c.line, c.model)
		}
		for _, o := range c.modelOnly {
			if !redundant(c.model, o.conj, o.term) {
				t.Errorf("%s:%d: condition %s: the model's %s has no DynamoDB term, and no other disjunct makes it redundant in (%s)", condTablePath, c.line, c.name, o.term, strings.Join(o.conj, " && "))
			}
		}
	}
	for name := range guards {
		if !used[name] {
			t.Errorf("%s marks a guard %s that no condition of %s names", modelPath, name, condTablePath)
		}
	}
}
