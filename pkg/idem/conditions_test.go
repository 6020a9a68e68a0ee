package idem_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
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

// This file reads the three texts the condition tests hold together: the
// table (model/conditions.txt), a boolean expression in DynamoDB's syntax
// or in Promela's, and idem.pml's marked guards. Every expression becomes
// a dnf, so that two texts compare term by term whatever their order or
// their parentheses.

// dnf is a disjunction of conjunctions of literals ("x", or "!x" for its
// negation), each conjunction sorted, the whole sorted: one text per
// boolean expression of atoms, up to the order of its terms.
type dnf [][]string

func (d dnf) String() string {
	var ors []string
	for _, and := range d {
		ors = append(ors, "("+strings.Join(and, " AND ")+")")
	}
	return strings.Join(ors, " OR ")
}

func negate(lit string) string {
	if s, ok := strings.CutPrefix(lit, "!"); ok {
		return s
	}
	return "!" + lit
}

// normal sorts and dedupes d, drops the constants "true" from its
// conjunctions and the conjunctions that hold "false" or a literal beside
// its negation.
func normal(d dnf) dnf {
	var out dnf
next:
	for _, and := range d {
		var lits []string
		for _, l := range and {
			switch l {
			case "true", "!false":
				continue
			case "false", "!true":
				continue next
			}
			if slices.Contains(and, negate(l)) {
				continue next
			}
			lits = append(lits, l)
		}
		slices.Sort(lits)
		lits = slices.Compact(lits)
		out = append(out, lits)
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(strings.Join(a, "\x00"), strings.Join(b, "\x00")) })
	return slices.CompactFunc(out, slices.Equal)
}

func or(a, b dnf) dnf { return normal(append(slices.Clone(a), b...)) }

func and(a, b dnf) dnf {
	var out dnf
	for _, x := range a {
		for _, y := range b {
			out = append(out, append(slices.Clone(x), y...))
		}
	}
	return normal(out)
}

func not(a dnf) dnf {
	out := dnf{{}} // true
	for _, conj := range a {
		var alt dnf
		for _, l := range conj {
			alt = append(alt, []string{negate(l)})
		}
		out = and(out, alt)
	}
	return out
}

// assume sets lit true in d: the conjunctions holding its negation go, and
// lit goes from the others.
func assume(d dnf, lit string) dnf {
	var out dnf
	for _, conj := range d {
		if slices.Contains(conj, negate(lit)) {
			continue
		}
		out = append(out, slices.DeleteFunc(slices.Clone(conj), func(l string) bool { return l == lit }))
	}
	return normal(out)
}

// syntax is a language's boolean operators.
type syntax struct {
	words       bool // AND, OR, NOT as words (DynamoDB); else &&, ||, !
	andOp, orOp string
	notOp       string
}

var (
	dynamoSyntax  = syntax{words: true, andOp: "AND", orOp: "OR", notOp: "NOT"}
	promelaSyntax = syntax{andOp: "&&", orOp: "||", notOp: "!"}
)

// squeeze drops white space: terms compare as text without it.
func squeeze(s string) string { return strings.Join(strings.Fields(s), "") }

// tokens splits expr into "(", ")", the operators and atoms. An atom is
// the text between them, squeezed; a call's parentheses (attribute_not_exists(pk),
// SAME_FP(fp)) stay in its atom.
func tokens(expr string, sx syntax) ([]string, error) {
	var toks []string
	var atom strings.Builder
	flush := func() {
		if a := squeeze(atom.String()); a != "" {
			toks = append(toks, a)
		}
		atom.Reset()
	}
	for i := 0; i < len(expr); {
		rest := expr[i:]
		word := func(w string) bool {
			if !strings.HasPrefix(strings.ToUpper(rest), w) {
				return false
			}
			before := i == 0 || !isIdent(expr[i-1])
			after := len(rest) == len(w) || !isIdent(rest[len(w)])
			return before && after
		}
		switch {
		case rest[0] == '(' && strings.TrimSpace(atom.String()) != "" && isIdent(lastByte(strings.TrimSpace(atom.String()))):
			end := strings.IndexByte(rest, ')')
			if end < 0 {
				return nil, fmt.Errorf("unclosed call in %q", expr)
			}
			atom.WriteString(rest[:end+1])
			i += end + 1
		case rest[0] == '(' || rest[0] == ')':
			flush()
			toks = append(toks, rest[:1])
			i++
		case sx.words && (word("AND") || word("NOT")):
			flush()
			toks = append(toks, strings.ToUpper(rest[:3]))
			i += 3
		case sx.words && word("OR"):
			flush()
			toks = append(toks, "OR")
			i += 2
		case sx.words && (word("BETWEEN") || word("IN")):
			return nil, fmt.Errorf("%q: BETWEEN and IN are not read here", expr)
		case !sx.words && (strings.HasPrefix(rest, "&&") || strings.HasPrefix(rest, "||")):
			flush()
			toks = append(toks, rest[:2])
			i += 2
		case !sx.words && rest[0] == '!' && !strings.HasPrefix(rest, "!="):
			flush()
			toks = append(toks, "!")
			i++
		default:
			atom.WriteByte(rest[0])
			i++
		}
	}
	flush()
	return toks, nil
}

func isIdent(c byte) bool {
	return c == '_' || c == '#' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func lastByte(s string) byte { return s[len(s)-1] }

// parseBool reads expr into its dnf, resolving each atom with resolve
// (nil: as it is).
func parseBool(expr string, sx syntax, resolve func(string) string) (dnf, error) {
	toks, err := tokens(expr, sx)
	if err != nil {
		return nil, err
	}
	p := &boolParser{toks: toks, sx: sx, resolve: resolve}
	d, err := p.or()
	if err == nil && p.i != len(toks) {
		err = fmt.Errorf("unexpected %q", toks[p.i])
	}
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	return d, nil
}

type boolParser struct {
	toks    []string
	i       int
	sx      syntax
	resolve func(string) string
}

func (p *boolParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *boolParser) or() (dnf, error) {
	d, err := p.and()
	for err == nil && p.peek() == p.sx.orOp {
		p.i++
		var e dnf
		if e, err = p.and(); err == nil {
			d = or(d, e)
		}
	}
	return d, err
}

func (p *boolParser) and() (dnf, error) {
	d, err := p.factor()
	for err == nil && p.peek() == p.sx.andOp {
		p.i++
		var e dnf
		if e, err = p.factor(); err == nil {
			d = and(d, e)
		}
	}
	return d, err
}

func (p *boolParser) factor() (dnf, error) {
	switch t := p.peek(); t {
	case "":
		return nil, fmt.Errorf("the expression ends early")
	case p.sx.notOp:
		p.i++
		d, err := p.factor()
		return not(d), err
	case "(":
		p.i++
		d, err := p.or()
		if err == nil && p.peek() != ")" {
			err = fmt.Errorf("want ), got %q", p.peek())
		}
		p.i++
		return d, err
	case ")", p.sx.andOp, p.sx.orOp:
		return nil, fmt.Errorf("unexpected %q", t)
	default:
		p.i++
		if p.resolve != nil {
			t = p.resolve(t)
		}
		return normal(dnf{{t}}), nil
	}
}

// condTable is model/conditions.txt: the meaning of each value, and each
// condition's two columns.
type condTable struct {
	values     map[string]string // placeholder -> its meaning
	conditions []*tableCondition
}

type tableCondition struct {
	name, guard, assume string
	dynamo, model       dnf
	modelOnly           []onlyTerm
	line                int
}

// onlyTerm is a model term with no DynamoDB term, in its conjunction.
type onlyTerm struct {
	conj []string
	term string
}

func (t *condTable) condition(name string) *tableCondition {
	for _, c := range t.conditions {
		if c.name == name {
			return c
		}
	}
	return nil
}

var termLine = regexp.MustCompile(`^\s+(or|and)\s+(.*?)\s+~\s+(.*?)\s*$`)

func readCondTable(path string) (*condTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := &condTable{values: map[string]string{}}
	var cur *tableCondition
	var dyn, mod [][]string
	var only []int // the conjunction of each model-only term
	end := func() {
		if cur != nil {
			cur.dynamo, cur.model = normal(dyn), normal(mod)
			for j, c := range only {
				if n := normal(dnf{mod[c]}); len(n) == 1 {
					cur.modelOnly[j].conj = n[0]
				}
			}
		}
		dyn, mod, only = nil, nil, nil
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0 || strings.HasPrefix(fields[0], "#"):
		case fields[0] == "value" && len(fields) >= 3:
			t.values[fields[1]] = strings.Join(fields[2:], " ")
		case fields[0] == "condition" && (len(fields) == 3 || len(fields) == 4):
			end()
			cur = &tableCondition{name: fields[1], guard: fields[2], line: n}
			if len(fields) == 4 {
				cur.assume = fields[3]
			}
			t.conditions = append(t.conditions, cur)
		case termLine.MatchString(line) && cur != nil:
			m := termLine.FindStringSubmatch(line)
			if m[1] == "or" {
				dyn, mod = append(dyn, nil), append(mod, nil)
			} else if len(dyn) == 0 {
				return nil, fmt.Errorf("%s:%d: an \"and\" before any \"or\"", path, n)
			}
			if m[2] != "-" {
				dyn[len(dyn)-1] = append(dyn[len(dyn)-1], squeeze(m[2]))
			} else {
				cur.modelOnly = append(cur.modelOnly, onlyTerm{term: squeeze(m[3])})
				only = append(only, len(mod)-1)
			}
			mod[len(mod)-1] = append(mod[len(mod)-1], squeeze(m[3]))
		default:
			return nil, fmt.Errorf("%s:%d: not a line of the table: %q", path, n, line)
		}
	}
	end()
	return t, sc.Err()
}

// redundant reports whether lit, in conj of d, is made redundant by
// another conjunction of d: one holding lit's negation and otherwise only
// terms of conj ((X AND !e) OR e is X OR e).
func redundant(d dnf, conj []string, lit string) bool {
	rest := slices.DeleteFunc(slices.Clone(conj), func(l string) bool { return l == lit })
	for _, other := range d {
		if !slices.Contains(other, negate(lit)) {
			continue
		}
		covered := true
		for _, l := range other {
			if l != negate(lit) && !slices.Contains(rest, l) {
				covered = false
			}
		}
		if covered {
			return true
		}
	}
	return false
}

var (
	guardMark = regexp.MustCompile(`/\*\s*guard\s+([\w-]+)`)
	comment   = regexp.MustCompile(`(?s)/\*.*?\*/`)
	identRe   = regexp.MustCompile(`[A-Za-z_]\w*`)
	defineRe  = regexp.MustCompile(`^#define\s+([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)$`)
	numberRe  = regexp.MustCompile(`^\d+$`)
)

// macro is a one-line #define of idem.pml.
type macro struct {
	params []string // nil: an object-like macro
	body   string
}

// modelGuards reads idem.pml as spin reads it with no switch defined
// (its #if and #ifdef lines kept or dropped, its one-line macros
// expanded, but for numeric constants, which keep their names), and
// returns each marked guard's dnf: the disjunction of the guards of the
// branches marked with its name.
func modelGuards(path string) (map[string]dnf, error) {
	text, macros, err := preprocess(path)
	if err != nil {
		return nil, err
	}
	guards := map[string]dnf{}
	for _, m := range guardMark.FindAllStringSubmatchIndex(text, -1) {
		name := text[m[2]:m[3]]
		rest := text[m[1]:]
		start := strings.Index(rest, "::")
		end := strings.Index(rest, "->")
		if start < 0 || end < start {
			return nil, fmt.Errorf("%s: guard %s marks no branch", path, name)
		}
		expr := comment.ReplaceAllString(rest[start+2:end], " ")
		expr, err := expand(expr, macros)
		if err != nil {
			return nil, fmt.Errorf("%s: guard %s: %w", path, name, err)
		}
		d, err := parseBool(expr, promelaSyntax, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: guard %s: %w", path, name, err)
		}
		guards[name] = or(guards[name], d)
	}
	return guards, nil
}

// preprocess keeps the lines of path that spin compiles with no switch,
// and collects the one-line macros they define.
func preprocess(path string) (string, map[string]macro, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	c := &cpp{macros: map[string]macro{}, stack: []cppLevel{{on: true, taken: true, parent: true}}}
	var out strings.Builder
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		word, arg, _ := strings.Cut(line, " ")
		switch directive, err := c.conditional(word, arg); {
		case err != nil:
			return "", nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		case directive || !c.stack[len(c.stack)-1].on:
		case word == "#define":
			for strings.HasSuffix(lines[i], "\\") { // a multi-line macro: not one a guard uses
				i++
			}
			c.define(line)
		default:
			out.WriteString(lines[i] + "\n")
		}
	}
	return out.String(), c.macros, nil
}

// cpp is the state of preprocess: the macros defined so far, and the
// conditional blocks open.
type cpp struct {
	macros map[string]macro
	stack  []cppLevel
}

// cppLevel is one open #if: whether its lines are kept, whether a branch
// of it was taken, whether the block it sits in is kept.
type cppLevel struct{ on, taken, parent bool }

func (c *cpp) defined(name string) bool { _, ok := c.macros[name]; return ok }

// conditional follows a line of #ifdef, #ifndef, #if, #elif, #else or
// #endif, and reports whether the line was one.
func (c *cpp) conditional(word, arg string) (bool, error) {
	top := &c.stack[len(c.stack)-1]
	switch word {
	case "#ifdef", "#ifndef", "#if":
		cond, err := directive(word, arg, c.defined)
		c.stack = append(c.stack, cppLevel{on: top.on && cond, taken: cond, parent: top.on})
		return true, err
	case "#elif":
		cond, err := directive("#if", arg, c.defined)
		top.on = top.parent && !top.taken && cond
		top.taken = top.taken || cond
		return true, err
	case "#else":
		top.on = top.parent && !top.taken
		top.taken = true
		return true, nil
	case "#endif":
		if len(c.stack) == 1 {
			return true, errors.New("#endif without #if")
		}
		c.stack = c.stack[:len(c.stack)-1]
		return true, nil
	}
	return false, nil
}

// define keeps the macro a #define line defines; one that spans lines is
// kept as such, for expand to refuse.
func (c *cpp) define(line string) {
	m := defineRe.FindStringSubmatch(line)
	switch {
	case m == nil:
	case strings.HasSuffix(line, "\\"):
		c.macros[m[1]] = macro{body: "\\"}
	default:
		mac := macro{body: stripComment(m[4])}
		if m[2] != "" {
			mac.params = strings.Split(strings.ReplaceAll(m[3], " ", ""), ",")
		}
		c.macros[m[1]] = mac
	}
}

func stripComment(s string) string { return strings.TrimSpace(comment.ReplaceAllString(s, "")) }

// directive evaluates #ifdef X, #ifndef X or #if over defined(X).
func directive(word, arg string, defined func(string) bool) (bool, error) {
	arg = stripComment(arg)
	switch word {
	case "#ifdef":
		return defined(arg), nil
	case "#ifndef":
		return !defined(arg), nil
	}
	d, err := parseBool(arg, promelaSyntax, func(atom string) string {
		if name, ok := strings.CutPrefix(atom, "defined("); ok {
			if defined(strings.TrimSuffix(name, ")")) {
				return "true"
			}
			return "false"
		}
		return atom
	})
	switch n := normal(d); {
	case err != nil:
		return false, err
	case len(n) == 0:
		return false, nil
	case len(n) == 1 && len(n[0]) == 0:
		return true, nil
	}
	return false, fmt.Errorf("#if %s: only defined() is read here", arg)
}

// expand replaces the macros in expr, until none is left but numeric
// constants.
func expand(expr string, macros map[string]macro) (string, error) {
	for range 10 {
		changed := false
		var err error
		expr = replaceIdents(expr, func(name, rest string) (string, int, bool) {
			mac, ok := macros[name]
			if !ok || numberRe.MatchString(mac.body) {
				return "", 0, false
			}
			if mac.body == "\\" {
				err = fmt.Errorf("macro %s spans lines", name)
				return "", 0, false
			}
			changed = true
			if mac.params == nil {
				return "(" + mac.body + ")", 0, true
			}
			open := strings.IndexByte(rest, '(')
			closing := strings.IndexByte(rest, ')')
			if open != 0 || closing < 0 {
				err = fmt.Errorf("macro %s without its arguments", name)
				return "", 0, false
			}
			args := strings.Split(rest[1:closing], ",")
			if len(args) != len(mac.params) {
				err = fmt.Errorf("macro %s: %d arguments, want %d", name, len(args), len(mac.params))
				return "", 0, false
			}
			body := replaceIdents(mac.body, func(p, _ string) (string, int, bool) {
				if j := slices.Index(mac.params, p); j >= 0 {
					return strings.TrimSpace(args[j]), 0, true
				}
				return "", 0, false
			})
			return "(" + body + ")", closing + 1, true
		})
		if err != nil || !changed {
			return expr, err
		}
	}
	return "", fmt.Errorf("macros nest too deep in %q", expr)
}

// replaceIdents calls fn on each identifier of s with the text after it;
// fn returns the replacement and how much of that text it consumed.
func replaceIdents(s string, fn func(name, rest string) (string, int, bool)) string {
	var b strings.Builder
	last := 0
	for _, loc := range identRe.FindAllStringIndex(s, -1) {
		if loc[0] < last {
			continue
		}
		repl, used, ok := fn(s[loc[0]:loc[1]], s[loc[1]:])
		if !ok {
			continue
		}
		b.WriteString(s[last:loc[0]])
		b.WriteString(repl)
		last = loc[1] + used
	}
	b.WriteString(s[last:])
	return b.String()
}
