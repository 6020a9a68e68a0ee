package door_test

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// The coverage of the front doors: every door the packages export, sent
// every request that must be refused before anything is written.

// exportedDoors lists the front doors of idemlambda and idemhttp from their
// source: every
// exported function or method outside the tests that returns a handler, a
// function whose first parameter is a context.Context or a net/http
// middleware (func(http.Handler) http.Handler), directly or through a
// named type of the package. A method is named Type.Method.
func exportedDoors(t *testing.T) []string {
	t.Helper()
	var doors []string
	for _, pkg := range []string{"idemlambda", "idemhttp"} {
		doors = append(doors, exportedDoorsOf(t, pkg)...)
	}
	slices.Sort(doors)
	return doors
}

// exportedDoorsOf lists the doors of pkg/idem/<pkg>, named pkg.Door.
func exportedDoorsOf(t *testing.T, pkg string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	named := map[string]*ast.FuncType{} // the package's func types, by name
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if ft, ok := ts.Type.(*ast.FuncType); ok {
					named[ts.Name.Name] = ft
				}
			}
			return true
		})
	}
	isSel := func(e ast.Expr, pkg, name string) bool {
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := s.X.(*ast.Ident)
		return ok && id.Name == pkg && s.Sel.Name == name
	}
	handler := func(e ast.Expr) bool {
		switch g := e.(type) { // a generic func type, instantiated: its type
		case *ast.IndexExpr:
			e = g.X
		case *ast.IndexListExpr:
			e = g.X
		}
		if isSel(e, "http", "Handler") || isSel(e, "http", "HandlerFunc") {
			return true // a net/http front door
		}
		ft, ok := e.(*ast.FuncType)
		if id, isID := e.(*ast.Ident); isID {
			ft, ok = named[id.Name]
		}
		if !ok || ft.Params == nil || len(ft.Params.List) == 0 {
			return false
		}
		first := ft.Params.List[0].Type
		middleware := len(ft.Params.List) == 1 && isSel(first, "http", "Handler") &&
			ft.Results != nil && len(ft.Results.List) == 1 && isSel(ft.Results.List[0].Type, "http", "Handler")
		return isSel(first, "context", "Context") || middleware
	}
	var doors []string
	for _, f := range parsed {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() || fd.Type.Results == nil {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil {
				recv := fd.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				id, ok := recv.(*ast.Ident)
				if !ok || !id.IsExported() {
					continue
				}
				name = id.Name + "." + name
			}
			if slices.ContainsFunc(fd.Type.Results.List, func(r *ast.Field) bool { return handler(r.Type) }) {
				doors = append(doors, pkg+"."+name)
			}
		}
	}
	return doors
}

// notDoors are the handlers exportedDoors finds that are no front door of
// this test: no caller's identity, header or body to refuse.
var notDoors = map[string]string{
	"idemlambda.SQS":            "a queue consumer: the consumer is the scope and the message id the key (idemlambda's consumer tests)",
	"idemlambda.EventBridge":    "an event consumer: the consumer is the scope and the event id the key (idemlambda's consumer tests)",
	"idemlambda.Kinesis":        "a stream consumer: the consumer is the scope and the record's id the key (idemlambda's stream tests)",
	"idemlambda.DynamoDBStream": "a stream consumer: the consumer is the scope and the change's id the key (idemlambda's stream tests)",
}

// fnEvent is an event as Function gets it in these tests: its key inside,
// and a body that the fingerprint takes whole.
type fnEvent struct {
	Key  string          `json:"key"`
	Body json.RawMessage `json:"body"`
}

// fnDriver is Function as the coverage test drives it: doorCall's scope is
// the consumer's (ConsumerOptions.Scope, "" refused when it is built), its
// keys the event's key; Function's error comes back as the error, and a
// door that panics when it is built as its error too.
func fnDriver(passThrough bool) func(s idemlambda.Doer, w work) func(doorCall) (answer, error) {
	return func(s idemlambda.Doer, w work) func(doorCall) (answer, error) { return fnCall(s, w, passThrough) }
}

func fnCall(s idemlambda.Doer, w work, passThrough bool) func(doorCall) (answer, error) {
	type out struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	return func(c doorCall) (a answer, err error) {
		defer func() {
			if p := recover(); p != nil {
				err, _ = p.(error)
			}
		}()
		h := idemlambda.Function(s, func(ctx context.Context, ev idemlambda.Event[fnEvent], tx *idem.Tx) (out, error) {
			st, b := w(ctx, ev.Scope, ev.Key, ev.Event.Body)
			return out{st, b}, nil
		}, func(o *idemlambda.ConsumerOptions[fnEvent]) {
			o.Scope, o.PassThrough = c.scope, passThrough
			o.Key = func(in *fnEvent) (string, error) { return in.Key, nil }
		})
		r, err := h(context.Background(), fnEvent{Key: strings.Join(c.keys, ","), Body: json.RawMessage(c.body)})
		return answer{status: r.Status, body: r.Body}, err
	}
}

// refusal is a request that every front door refuses before anything is
// written: how an HTTP door answers it (problem details), and what
// Function does with it.
type refusal struct {
	name   string
	c      doorCall
	status int
	code   string
	reads  bool // the record that refuses it is read (the 422): one Do, no other call
	// fn is Function's error; fnPass, that with PassThrough the handler
	// runs instead (and writes no record); fnNA, why the request cannot
	// reach a Function at all.
	fn     error
	fnPass bool
	fnNA   string
}

// k1 is stored before the refusals, for the 422.
var k1 = doorCall{"alice", []string{"k1"}, `{"a":1}`}

var refusals = []refusal{
	{name: "no identity (a client-set scope header is ignored)", c: doorCall{"", []string{"n1"}, `{}`}, status: 401, code: "unauthenticated", fn: idem.ErrInvalidOptions},
	{name: "an identity that is not valid UTF-8 (Latin-1 from a proxy)", c: doorCall{"m\xfcller", []string{"n1"}, `{}`}, status: 401, code: "unauthenticated", fn: idem.ErrInvalidOptions},
	{name: "no key", c: doorCall{"alice", nil, `{}`}, status: 400, code: "idempotency_key_missing", fn: idemlambda.ErrNoKey, fnPass: true},
	{name: "an empty key", c: doorCall{"alice", []string{""}, `{}`}, status: 400, code: "idempotency_key_invalid", fn: idemlambda.ErrNoKey, fnPass: true},
	{name: "several keys", c: doorCall{"alice", []string{"n1", "n2"}, `{}`}, status: 400, code: "idempotency_key_invalid",
		fnNA: "an event's key is one value (ConsumerOptions.Key), not a header that repeats"},
	{name: "a key of 256 bytes", c: doorCall{"alice", []string{strings.Repeat("k", 256)}, `{}`}, status: 400, code: "idempotency_key_invalid", fn: idem.ErrInvalidKey},
	{name: "a key with a control byte", c: doorCall{"alice", []string{"n\x01"}, `{}`}, status: 400, code: "idempotency_key_invalid", fn: idem.ErrInvalidKey},
	{name: "a body over the limit", c: doorCall{"alice", []string{"n1"}, `"` + strings.Repeat("x", 70<<10) + `"`}, status: 413, code: "body_too_large",
		fnNA: "Function stores only its event's hash, and Lambda bounds the event"},
	{name: "bad JSON", c: doorCall{"alice", []string{"n1"}, `{"a":`}, status: 400, code: "invalid_json", fn: idem.ErrInvalidBody},
	{name: "names the decoder folds into one (a and A)", c: doorCall{"alice", []string{"n1"}, `{"a":1,"A":2}`}, status: 400, code: "invalid_json",
		fnNA: "Function fingerprints the value Lambda decoded, as the door marshals it: names that differ only in case are a map's two keys (FingerprintValue)"},
	{name: "the key with another request", c: doorCall{"alice", []string{"k1"}, `{"a":3}`}, status: 422, code: "idempotency_key_reused", reads: true, fn: idem.ErrFingerprintMismatch},
}

// The table below walks every door the packages export: one a test does
// not know is a failure here, not a door left uncovered.
func TestEveryDoorIsInTheRefusalTable(t *testing.T) {
	covered := []string{"idemlambda.Function", "idemlambda.Function"}
	for _, d := range drivers {
		covered = append(covered, d.door)
	}
	exported := exportedDoors(t)
	for _, door := range exported {
		if !slices.Contains(covered, door) && notDoors[door] == "" {
			t.Errorf("%s is a front door with no row in the refusal table: add a driver (drivers) or a reason to notDoors", door)
		}
	}
	for _, door := range covered {
		if !slices.Contains(exported, door) {
			t.Errorf("a row names %s, which the packages do not export as a door (found %v)", door, exported)
		}
	}
}

// doorRow is one door as the tests that walk every door drive it: an HTTP
// driver, whose error is always nil, or Function.
type doorRow struct {
	name        string
	fn          bool
	passThrough bool
	make        func(s idemlambda.Doer, w work) func(doorCall) (answer, error)
}

func doorRows() []doorRow {
	var rows []doorRow
	for _, d := range drivers {
		rows = append(rows, doorRow{d.name, false, false, func(s idemlambda.Doer, w work) func(doorCall) (answer, error) {
			call := d.make(s, w)
			return func(c doorCall) (answer, error) { return call(c), nil }
		}})
	}
	return append(rows, doorRow{"Function", true, false, fnDriver(false)}, doorRow{"Function, pass-through", true, true, fnDriver(true)})
}

// snapshot is every item of the idempotency table, decoded.
func snapshot(f *testbed.Fixture) []map[string]any {
	f.T.Helper()
	out, err := f.Raw.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(f.Table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		f.T.Fatal(err)
	}
	var items []map[string]any
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
		f.T.Fatal(err)
	}
	slices.SortFunc(items, func(a, b map[string]any) int {
		return strings.Compare(a[idem.AttrPK].(string), b[idem.AttrPK].(string))
	})
	return items
}

// Every door × every refusal, on DynamoDB Local and on the fake: an HTTP
// door answers problem details with the status and code, Function its
// error (or, with PassThrough and no key, runs the handler bare); none
// runs the handler, writes to the table, calls DynamoDB but to
// claim the record that refuses it (the fake: calls Do but for that one),
// or panics.
func TestEveryDoorRefusesBeforeWriting(t *testing.T) {
	for _, engine := range []string{"DynamoDB Local", "fake"} {
		for _, d := range doorRows() {
			t.Run(engine+"/"+d.name, func(t *testing.T) {
				var f *testbed.Fixture
				var s idemlambda.Doer
				fk := newFake()
				if engine == "fake" {
					s = fk
				} else {
					f = newFixture(t)
					s = f.Store
				}
				var runs atomic.Int32
				call := d.make(s, func(ctx context.Context, scope, key string, body []byte) (int, string) {
					runs.Add(1)
					return 201, "made"
				})
				if a, err := call(k1); err != nil || a.status != 201 || runs.Load() != 1 {
					t.Fatalf("k1 = %+v %v", a, err)
				}
				for _, r := range refusals {
					t.Run(r.name, func(t *testing.T) {
						if d.fn && r.fnNA != "" {
							t.Skip(r.fnNA)
						}
						var before []map[string]any
						if f != nil {
							before = snapshot(f)
							f.DB.Reset()
						}
						ran := runs.Load()
						fk.calls.Store(0)
						var a answer
						var err error
						func() {
							defer func() {
								if p := recover(); p != nil {
									t.Fatalf("panicked: %v", p)
								}
							}()
							a, err = call(r.c)
						}()
						switch {
						case !d.fn:
							if a.status != r.status || !strings.Contains(a.body, `"code":"`+r.code+`"`) {
								t.Errorf("%d %s, want %d %s", a.status, a.body, r.status, r.code)
							}
							checkProblem(t, a.status, a.header["Content-Type"], []byte(a.body))
						case d.passThrough && r.fnPass:
							if err != nil || a.status != 201 || runs.Load() != ran+1 {
								t.Errorf("pass-through = %+v %v, want the handler's answer", a, err)
							}
							ran++
						case !errors.Is(err, r.fn):
							t.Errorf("error %v, want %v", err, r.fn)
						}
						if n := runs.Load() - ran; n != 0 {
							t.Errorf("the handler ran %d times", n)
						}
						if f == nil {
							want := int32(0)
							if r.reads || (d.fn && errors.Is(r.fn, idem.ErrInvalidKey)) {
								want = 1 // the claim that finds k1; Function leaves the key's check to Do
							}
							if got := fk.calls.Load(); got != want {
								t.Errorf("Do called %d times, want %d", got, want)
							}
							return
						}
						switch calls := f.DB.Calls(); {
						case r.reads && !maps.Equal(calls, map[string]int{"PutItem": 1}):
							t.Errorf("DynamoDB calls %v, want the one claim that finds the record", calls)
						case !r.reads && f.DB.Total() != 0:
							t.Errorf("DynamoDB calls %v, want none", calls)
						}
						if after := snapshot(f); !reflect.DeepEqual(after, before) {
							t.Errorf("the table changed:\n%v\nwas\n%v", after, before)
						}
					})
				}
			})
		}
	}
}

// TestAScopeOverTheLimitIs401: a verified identity over MaxScopeLength
// cannot be a scope: 401 before anything is written, on every HTTP door;
// one of exactly the limit is served.
func TestAScopeOverTheLimitIs401(t *testing.T) {
	for _, d := range drivers {
		call := d.make(newFake(), func(context.Context, string, string, []byte) (int, string) { return 201, "made" })
		at := call(doorCall{strings.Repeat("s", idem.MaxScopeLength), []string{"k1"}, `{}`})
		over := call(doorCall{strings.Repeat("s", idem.MaxScopeLength+1), []string{"k1"}, `{}`})
		if at.status != 201 || over.status != http.StatusUnauthorized {
			t.Errorf("%s: %d at the limit, %d over it; want 201 and 401", d.name, at.status, over.status)
		}
	}
}
