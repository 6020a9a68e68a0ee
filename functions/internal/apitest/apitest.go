// Package apitest drives the functions' handlers in tests with the events
// API Gateway would send for real HTTP requests on template.yaml's routes.
package apitest

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/functions/internal/httpx"
	"github.com/idemkeys/idem/internal/httpapi"
	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/dynamo"
	"github.com/idemkeys/idem/local/template"
	"github.com/idemkeys/idem/local/template/templatetest"
	"github.com/idemkeys/idem/pkg/idemclient"
)

// Function loads the template and returns the function with logicalID.
func Function(t testing.TB, logicalID string) *template.Function {
	t.Helper()
	fn, err := templatetest.Project(t).Function(logicalID)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// Host is the host the requests are sent to, as a deployed HTTP API's
// default endpoint names it.
const Host = "api-id.execute-api.us-east-1.amazonaws.com"

// Caller sends requests to a handler through the function's routes.
type Caller struct {
	T      testing.TB
	Routes []template.Route
	Handle httpx.Routes
	// Handler, when set, is called instead of Handle: the function's
	// handler as lambda.Start runs it (its invocation span included).
	Handler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
}

// Call sends one request as API Gateway would present it. sub is the
// verified caller ("" sends no authorizer context), key the Idempotency-Key
// ("" sends none), extra more header name and value pairs.
func (c *Caller) Call(method, path, sub, key, body string, extra ...string) events.APIGatewayV2HTTPResponse {
	c.T.Helper()
	return c.CallRaw(method, path, path, sub, key, body, extra...)
}

// CallRaw is Call for a request that API Gateway routes as path but whose
// raw path is rawPath: "/orders/o-1/" with a trailing slash, or
// "/v1/orders/o-1" behind a custom domain's API mapping "v1". The route
// key and path parameters are those of path.
func (c *Caller) CallRaw(method, path, rawPath, sub, key, body string, extra ...string) events.APIGatewayV2HTTPResponse {
	c.T.Helper()
	r := httptest.NewRequest(method, "https://"+Host+rawPath, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if key != "" {
		r.Header.Set(idemclient.HeaderKey, key)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		r.Header.Set(extra[i], extra[i+1])
	}
	route, params, ok := apigw.Match(c.Routes, method, path)
	if !ok {
		c.T.Fatalf("no template route for %s %s", method, path)
	}
	handle := c.Handle.Handle
	if c.Handler != nil {
		handle = c.Handler
	}
	resp, err := handle(context.Background(), apigw.Event(r, []byte(body), route, params, Claims(c.T, sub)))
	if err != nil {
		c.T.Fatalf("%s %s: handler error %v", method, path, err)
	}
	return resp
}

// authorizer is make run's JWT authorizer with a key of the tests' own.
var authorizer = &apigw.Authorizer{Secret: []byte("apitest's own key, 32 bytes long"), Issuer: devstack.Issuer, Audiences: []string{devstack.Audience}}

// Claims are the claims that make run's authorizer passes to a function for
// a token of sub's, valid an hour (sub, iss, aud, iat, exp, as strings);
// sub "" has none (no authorizer context).
func Claims(t testing.TB, sub string) map[string]string {
	t.Helper()
	if sub == "" {
		return nil
	}
	tok, err := authorizer.Token(sub, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := authorizer.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	return claims
}

// ErrorCode is the stable code of a problem details response (RFC 9457,
// member "code"); it fails t on an error that is not problem details.
func ErrorCode(t testing.TB, resp events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	if ct := resp.Headers["Content-Type"]; ct != httpapi.ContentType || !json.Valid([]byte(resp.Body)) {
		t.Fatalf("error %d is not problem details: %s %q", resp.StatusCode, ct, resp.Body)
	}
	return httpapi.Code([]byte(resp.Body))
}

// Items counts the items in tables, with consistent reads.
func Items(t testing.TB, db *dynamodb.Client, tables ...string) int {
	t.Helper()
	n := 0
	for _, table := range tables {
		out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		n += int(out.Count)
	}
	return n
}

// CheckRoutes fails t unless the handlers serve exactly the routes that the
// template declares for the function.
func CheckRoutes(t testing.TB, fn *template.Function, handlers httpx.Routes) {
	t.Helper()
	var declared, handled []string
	for _, r := range fn.Routes {
		declared = append(declared, r.Method+" "+r.Path)
	}
	for k := range handlers {
		handled = append(handled, k)
	}
	slices.Sort(declared)
	slices.Sort(handled)
	if !slices.Equal(declared, handled) {
		t.Fatalf("%s: template routes %v, handlers %v", fn.LogicalID, declared, handled)
	}
}

// CheckKeys fails t unless the template's table has exactly these key
// attributes, hash first.
func CheckKeys(t testing.TB, logicalID string, keys ...string) {
	t.Helper()
	def, err := dynamo.ProjectTable(logicalID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range def.KeySchema {
		got = append(got, aws.ToString(k.AttributeName))
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("%s keys are %v in the template, %v in the code", logicalID, got, keys)
	}
}
