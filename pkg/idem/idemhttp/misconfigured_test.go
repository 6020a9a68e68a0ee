package idemhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// TestWrapOnATableOfAnotherKeySchemaIs500: a table whose hash key is not
// the string pk refuses every claim with a ValidationException. Wrap
// answers it as the misconfiguration it is, a 500 without Retry-After,
// never a 503 that says retrying is safe; Do's handler never runs.
func TestWrapOnATableOfAnotherKeySchemaIs500(t *testing.T) {
	raw := idemtest.Client(t)
	table := idemtest.CreateTable(t, raw, &dynamodb.CreateTableInput{
		TableName:            aws.String("misfit"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(idem.AttrPK), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(idem.AttrPK), KeyType: types.KeyTypeHash}},
	})
	store, err := idem.New(raw, table)
	if err != nil {
		t.Fatal(err)
	}
	for _, atomic := range []bool{false, true} {
		ran := false
		h := idemhttp.Wrap(store, nil, func(context.Context, idemhttp.Request[http.Request, struct{}], *idem.Tx) (idem.Response, error) {
			ran = true
			return idem.Response{StatusCode: 201}, nil
		}, func(o *idemhttp.Options[http.Request]) {
			o.Scope = func(*http.Request) string { return "alice" }
			o.Atomic = atomic
		})
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/orders", strings.NewReader(`{}`))
		r.Header.Set(idemhttp.HeaderIdempotencyKey, "k1")
		h.ServeHTTP(rec, r)
		if rec.Code != 500 || rec.Header().Get("Retry-After") != "" || !strings.Contains(rec.Body.String(), `"code":"misconfigured"`) {
			t.Fatalf("atomic %v: %d %v %s, want 500 misconfigured without Retry-After", atomic, rec.Code, rec.Header(), rec.Body)
		}
		if ran && !atomic { // DoAtomic runs the work before its one call
			t.Fatal("the handler ran after a refused claim")
		}
	}
}
