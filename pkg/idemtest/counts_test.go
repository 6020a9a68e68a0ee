package idemtest_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// calls is what the Faults counted: PutItem, GetItem, UpdateItem,
// TransactWriteItems, and Commits.
type calls struct{ put, get, update, transact, commits int }

func counted(f *idemtest.Faults) calls {
	return calls{f.Calls(idemtest.PutItem), f.Calls(idemtest.GetItem), f.Calls(idemtest.UpdateItem), f.Calls(idemtest.TransactWriteItems), f.Commits()}
}

// TestTheCountsCountWhatThePackageDocSays holds the package doc's table,
// "What the counts count", call by call on each path, with business writes
// and without: Calls by role, Commits once per effect.
func TestTheCountsCountWhatThePackageDocSays(t *testing.T) {
	lost := idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer}
	lostClaim := idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.LostAnswer}
	for _, c := range []struct {
		name         string
		writes       bool
		fault        *idemtest.Fault
		requests     []string // each request's work: "ok", "fails", "crashes"
		do, doAtomic calls
	}{
		{"a first request", true, nil, []string{"ok"}, calls{put: 1, transact: 1, commits: 1}, calls{transact: 1, commits: 1}},
		{"a first request, no business writes", false, nil, []string{"ok"}, calls{put: 2, commits: 1}, calls{put: 1, commits: 1}},
		{"a duplicate", true, nil, []string{"ok", "ok"}, calls{put: 2, transact: 1, commits: 1}, calls{transact: 2, commits: 1}},
		{"a duplicate, no business writes", false, nil, []string{"ok", "ok"}, calls{put: 3, commits: 1}, calls{put: 2, commits: 1}},
		{"a work that fails", true, nil, []string{"fails"}, calls{put: 1, update: 1}, calls{}},
		{"a work that fails, and its retry", true, nil, []string{"fails", "ok"}, calls{put: 3, update: 1, transact: 1, commits: 1}, calls{transact: 1, commits: 1}},
		{"a crash, and a retry once the lease ran out", true, nil, []string{"crashes", "ok"}, calls{put: 3, transact: 1, commits: 1}, calls{transact: 1, commits: 1}},
		{"a commit whose answer was lost", true, &lost, []string{"ok"}, calls{put: 1, update: 1, transact: 1, commits: 1}, calls{put: 1, transact: 1, commits: 1}},
		{"a first PutItem whose answer was lost, and a retry", false, &lostClaim, []string{"ok", "ok"}, calls{put: 5, commits: 1}, calls{put: 3, commits: 1}},
	} {
		for _, atomic := range []bool{false, true} {
			want, name := c.do, "Do/"+c.name
			if atomic {
				want, name = c.doAtomic, "DoAtomic/"+c.name
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := idemtest.NewStore(t)
				orders := ordersTable(t, s.Client)
				do := s.Do
				if atomic {
					do = s.DoAtomic
				}
				if c.fault != nil {
					s.Faults.Inject(*c.fault)
				}
				for _, work := range c.requests {
					idemtest.Invoke(context.Background(), func(ctx context.Context) {
						_, _ = do(ctx, idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"}, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) { // each request's answer is its fault's; the counts are what is checked
							switch work {
							case "fails":
								return idem.Response{}, errors.New("the provider timed out")
							case "crashes":
								idemtest.Crash(ctx)
							}
							if c.writes {
								tx.Add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(orders), Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "o1"}}}}, nil)
							}
							return idem.Response{StatusCode: 201}, nil
						})
					})
					if work == "crashes" {
						s.Clock.Advance(30 * time.Second) // the default lease runs out
					}
				}
				if got := counted(s.Faults); got != want {
					t.Errorf("counted %+v, want %+v", got, want)
				}
			})
		}
	}
}

// The package doc names every Example of the package, and only those:
// go doc prints none of them.
func TestThePackageDocNamesEveryExample(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "example_test.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, name := range regexp.MustCompile(`\bExample[A-Z]\w*`).FindAllString(string(doc), -1) {
		named[name] = true
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || !strings.HasPrefix(fn.Name.Name, "Example") {
			continue
		}
		if !named[fn.Name.Name] {
			t.Errorf("doc.go does not name %s", fn.Name.Name)
		}
		delete(named, fn.Name.Name)
	}
	for name := range named {
		t.Errorf("doc.go names %s, which example_test.go does not have", name)
	}
}

// Commits counts a commit when it lands: a late one once it has (here a
// completed record put by hand, as a commit without business writes puts
// it), a fenced holder's never.
func TestCommitsCountACommitWhenItLandsAndAFencedOneNever(t *testing.T) {
	s := idemtest.NewStore(t, func(o *idem.Options) { o.Lease = 10 * time.Second })
	completed := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "by-hand"}, "status": &types.AttributeValueMemberS{Value: "COMPLETED"},
		"lease_token": &types.AttributeValueMemberS{Value: "t"}, "fingerprint": &types.AttributeValueMemberS{Value: "f"},
	}
	s.Faults.Inject(idemtest.Fault{Op: idemtest.PutItem, Kind: idemtest.LandLate})
	_, _ = s.Faults.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: completed}) // it times out now and lands later: the counts are what is checked
	before := s.Faults.Commits()
	s.Faults.Landed()
	if after := s.Faults.Commits(); before != 0 || after != 1 {
		t.Fatalf("commits %d before the late commit landed, %d after; want 0, then 1", before, after)
	}

	ctx, req := context.Background(), idem.Request{Scope: "alice", Key: "order-1", Fingerprint: "v1"}
	claimed, resume, stalled := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		_, err := s.Do(ctx, req, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			close(claimed)
			<-resume
			return idem.Response{StatusCode: 201}, nil
		})
		stalled <- err
	}()
	<-claimed
	s.Clock.Advance(11 * time.Second)
	if _, err := s.Another().Do(ctx, req, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 201}, nil
	}); err != nil {
		t.Fatal(err)
	}
	close(resume)
	if fenced := <-stalled; !errors.Is(fenced, idem.ErrLeaseLost) || s.Faults.Commits() != 2 {
		t.Fatalf("the stalled holder: %v, %d commits; want it fenced, and only the takeover's commit counted", fenced, s.Faults.Commits())
	}
}
