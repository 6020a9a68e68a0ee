package dynamotest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Actions sits under a client as its HTTP client, as Wire does, and
// records the IAM action each request it sends needs, by table: what a
// role must grant for the calls made. A TransactWriteItems needs, per
// action inside it, dynamodb:PutItem, UpdateItem, DeleteItem or
// ConditionCheckItem on that action's table (DynamoDB authorises a
// transaction action by action); a TransactGetItems, dynamodb:GetItem;
// every other operation, dynamodb:<operation> on its TableName (or on each
// table of a batch's RequestItems). A table Table made is named by its
// logical id ("ChargesTable").
//
//	calls := &dynamotest.Actions{}
//	db := dynamotest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = calls })
type Actions struct {
	// Next sends the requests (default: the SDK's own default client).
	Next aws.HTTPClient

	mu   sync.Mutex
	seen map[string]map[string]bool // logical table id -> action
}

// Do records what req needs and sends it.
func (a *Actions) Do(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close() // what was read is kept; a failed close loses nothing of it
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	a.mu.Lock()
	if a.seen == nil {
		a.seen = map[string]map[string]bool{}
	}
	for _, n := range needs(op, body) {
		id := logicalID(n.table)
		if a.seen[id] == nil {
			a.seen[id] = map[string]bool{}
		}
		a.seen[id][n.action] = true
	}
	if a.Next == nil {
		a.Next = awshttp.NewBuildableClient()
	}
	next := a.Next
	a.mu.Unlock()
	return next.Do(req)
}

// Needed returns the actions recorded so far, sorted, by logical table id.
func (a *Actions) Needed() map[string][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string][]string{}
	for table, actions := range a.seen {
		for action := range actions {
			out[table] = append(out[table], action)
		}
		slices.Sort(out[table])
	}
	return out
}

// transactionActions are the IAM actions of a transaction's kinds of item.
var transactionActions = map[string]string{"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem", "Delete": "dynamodb:DeleteItem",
	"ConditionCheck": "dynamodb:ConditionCheckItem", "Get": "dynamodb:GetItem"}

// need is one action on one table.
type need struct{ table, action string }

// needs is what one request of op with body needs.
func needs(op string, body []byte) []need {
	var in struct {
		TableName     string
		TransactItems []map[string]struct{ TableName string }
		RequestItems  map[string]json.RawMessage
	}
	_ = json.Unmarshal(body, &in) // a body that is not JSON names no table, and the engine refuses it itself
	var out []need
	switch {
	case op == "TransactWriteItems" || op == "TransactGetItems":
		for _, item := range in.TransactItems {
			for kind, v := range item {
				out = append(out, need{v.TableName, transactionActions[kind]})
			}
		}
	case len(in.RequestItems) > 0:
		for table := range in.RequestItems {
			out = append(out, need{table, "dynamodb:" + op})
		}
	default:
		out = append(out, need{in.TableName, "dynamodb:" + op})
	}
	return out
}

// logicalID is the template's name of a table Table made
// ("test-ChargesTable-abcdefghij" is ChargesTable), else the name itself.
func logicalID(table string) string {
	rest, ok := strings.CutPrefix(table, "test-")
	if i := strings.LastIndexByte(rest, '-'); ok && i > 0 && len(rest)-i-1 == 10 {
		return rest[:i]
	}
	return table
}
