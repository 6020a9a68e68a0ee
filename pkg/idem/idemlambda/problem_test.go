package idemlambda_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// TestAConflictsProblemIsStoredAndReplayed: on a Lambda door, a
// ConflictFunc's idemlambda.Problem is the door's own problem details
// under its ProblemBase, stored with the key: the retry replays it, marked,
// and the handler does not run again.
func TestAConflictsProblemIsStoredAndReplayed(t *testing.T) {
	const base = "https://example.com/problems#"
	f := newFixture(t)
	runs := 0
	h := idemlambda.HTTPAPI(f.Store, nil, func(ctx context.Context, req apiReq, tx *idem.Tx) (idem.Response, error) {
		runs++
		tx.Add(f.OrderPut(req.Scope, "o1", req.Key), func(map[string]types.AttributeValue) (idem.Response, error) {
			return idemlambda.Problem(base, http.StatusConflict, "order_exists", "order o1 exists"), nil
		})
		return idem.Response{StatusCode: 201}, nil
	}, func(o *idemlambda.Options[events.APIGatewayV2HTTPRequest]) { o.ProblemBase = base })
	send := func(key string) events.APIGatewayV2HTTPResponse {
		r, _ := h(context.Background(), apiRequest("alice", map[string]string{"idempotency-key": key}, `{}`))
		return r
	}
	if r := send("k1"); r.StatusCode != 201 {
		t.Fatalf("first = %d %s", r.StatusCode, r.Body)
	}
	conflict, retry := send("k2"), send("k2")
	for _, r := range []events.APIGatewayV2HTTPResponse{conflict, retry} {
		if r.StatusCode != 409 || r.Headers["Content-Type"] != problemJSON || problemCode(r.Body) != "order_exists" ||
			!strings.Contains(r.Body, `"type":"`+base+`order_exists"`) || !strings.Contains(r.Body, `"title":"Conflict"`) {
			t.Fatalf("%d %v %s, want the door's 409 problem under its base", r.StatusCode, r.Headers, r.Body)
		}
	}
	if conflict.Headers[idemlambda.HeaderReplayed] != "" || retry.Headers[idemlambda.HeaderReplayed] != "true" || runs != 2 {
		t.Fatalf("replayed %q then %q after %d runs, want the retry replayed after 2", conflict.Headers[idemlambda.HeaderReplayed], retry.Headers[idemlambda.HeaderReplayed], runs)
	}
}

// problemJSON is the media type of problem details (RFC 9457).
const problemJSON = "application/problem+json"

// problemCode is the code member of a problem details body ("" if none).
func problemCode(body string) string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal([]byte(body), &p) // a body that is not one has no code
	return p.Code
}
