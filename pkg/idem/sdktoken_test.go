package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// tokenWire answers each request with the next of its answers (status and
// body), after keeping the request's body.
type tokenWire struct {
	answers  []string
	statuses []int
	bodies   [][]byte
}

func (w *tokenWire) Do(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	n := len(w.bodies)
	w.bodies = append(w.bodies, b)
	return &http.Response{StatusCode: w.statuses[n], Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(bytes.NewReader([]byte(w.answers[n]))), Request: r}, nil
}

// TestTheSDKSetsOneClientRequestTokenForEveryRetryOfACall pins what the
// commit's own ClientRequestToken rests on, and what taking it away would
// leave: the SDK sets a token on a TransactWriteItemsInput that has none,
// once per call, before its retries, so that a retry of a transaction
// whose answer was lost carries the first send's token and DynamoDB
// answers it as the first. It writes the token into the caller's input
// too, and a new call (a new input) gets a new one.
func TestTheSDKSetsOneClientRequestTokenForEveryRetryOfACall(t *testing.T) {
	w := &tokenWire{
		statuses: []int{500, 200, 200},
		answers:  []string{`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"lost"}`, `{}`, `{}`},
	}
	db := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://dynamodb.invalid"), HTTPClient: w,
		Credentials: aws.AnonymousCredentials{},
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
	})
	input := func() *dynamodb.TransactWriteItemsInput {
		return &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String("orders"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "o1"}},
		}}}}
	}
	first, second := input(), input()
	for _, in := range []*dynamodb.TransactWriteItemsInput{first, second} {
		if _, err := db.TransactWriteItems(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.bodies) != 3 {
		t.Fatalf("%d sends, want 3: the first call's, its retry, the second call's", len(w.bodies))
	}
	var sent [3]struct{ ClientRequestToken string }
	for i, b := range w.bodies {
		if err := json.Unmarshal(b, &sent[i]); err != nil {
			t.Fatal(err)
		}
	}
	switch tok := sent[0].ClientRequestToken; {
	case tok == "":
		t.Fatalf("the SDK sent no ClientRequestToken: %s", w.bodies[0])
	case sent[1].ClientRequestToken != tok:
		t.Fatalf("the SDK's retry carried token %q, the first send %q: want the same", sent[1].ClientRequestToken, tok)
	case aws.ToString(first.ClientRequestToken) != tok:
		t.Fatalf("the caller's input holds %q, the send carried %q", aws.ToString(first.ClientRequestToken), tok)
	case sent[2].ClientRequestToken == "" || sent[2].ClientRequestToken == tok:
		t.Fatalf("a second call carried token %q, the first %q: want a new one", sent[2].ClientRequestToken, tok)
	}
}
