// Package apitest drives the functions' handlers in tests with the events
// API Gateway would send for real HTTP requests on template.yaml's routes.
package apitest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
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
	"github.com/idemkeys/idem/local/contract"
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

// Request is one request as a client sends it to the API.
type Request struct {
	Method string
	// Path is the path API Gateway routes: the route key and path
	// parameters are its.
	Path string
	// RawPath, when set, is the path the client sent, routed as Path:
	// "/orders/o-1/" with a trailing slash, or "/v1/orders/o-1" behind a
	// custom domain's API mapping "v1".
	RawPath string
	// Sub is the verified caller: its token goes in Authorization and its
	// claims in the authorizer context. "" sends neither.
	Sub string
	// Key is the Idempotency-Key; "" sends none.
	Key  string
	Body string
	// Header holds more headers, set after the others (Content-Type is
	// application/json unless it says otherwise).
	Header map[string]string
	// Outside says why this request, which openapi.yaml refuses, is meant
	// to be accepted (contract.Exchange.Outside); "" holds it to the
	// description like any other.
	Outside string
}

// Call sends r as API Gateway would present it, and fails c.T unless
// openapi.yaml allows the answer (local/contract).
func (c *Caller) Call(ctx context.Context, r Request) events.APIGatewayV2HTTPResponse {
	c.T.Helper()
	raw := r.RawPath
	if raw == "" {
		raw = r.Path
	}
	req := httptest.NewRequestWithContext(ctx, r.Method, "https://"+Host+raw, strings.NewReader(r.Body))
	req.Header.Set("Content-Type", "application/json")
	if r.Key != "" {
		req.Header.Set(idemclient.HeaderKey, r.Key)
	}
	tok, claims := verified(c.T, r.Sub)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	route, params, ok := apigw.Match(c.Routes, r.Method, r.Path)
	if !ok {
		c.T.Fatalf("no template route for %s %s", r.Method, r.Path)
	}
	handle := c.Handle.Handle
	if c.Handler != nil {
		handle = c.Handler
	}
	resp, err := handle(ctx, apigw.Event(req, []byte(r.Body), route, params, claims))
	if err != nil {
		c.T.Fatalf("%s %s: handler error %v", r.Method, r.Path, err)
	}
	// Held to the description as routed: a raw path behind a custom
	// domain's mapping is the same operation.
	routed := req.Clone(ctx)
	routed.URL.Path, routed.URL.RawPath = r.Path, ""
	if err := checkContract(contract.Exchange{Request: routed, RequestBody: []byte(r.Body), Outside: r.Outside}, resp); err != nil {
		c.T.Errorf("contract: %v", err)
	}
	return resp
}

// Send is Call of the request most tests send: method and path, the
// verified caller sub, the Idempotency-Key key, and body.
func (c *Caller) Send(method, path, sub, key, body string) events.APIGatewayV2HTTPResponse {
	c.T.Helper()
	return c.Call(context.Background(), Request{Method: method, Path: path, Sub: sub, Key: key, Body: body})
}

// checkContract holds the request and the function's answer to openapi.yaml.
func checkContract(x contract.Exchange, resp events.APIGatewayV2HTTPResponse) error {
	h := http.Header{}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	out := []byte(resp.Body)
	if resp.IsBase64Encoded {
		var err error
		if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			return fmt.Errorf("a base64 body that does not decode: %w", err)
		}
	}
	x.Response, x.ResponseBody = &http.Response{StatusCode: resp.StatusCode, Header: h}, out
	return contract.Check(x)
}

// authorizer is make run's JWT authorizer with a key of the tests' own.
var authorizer = &apigw.Authorizer{Secret: []byte("apitest's own key, 32 bytes long"), Issuer: devstack.Issuer, Audiences: []string{devstack.Audience}}

// Claims are the claims that make run's authorizer passes to a function for
// a token of sub's, valid an hour (sub, iss, aud, iat, exp, as strings);
// sub "" has none (no authorizer context).
func Claims(t testing.TB, sub string) map[string]string {
	t.Helper()
	_, claims := verified(t, sub)
	return claims
}

// verified is a token of sub's, valid an hour, and the claims the
// authorizer passes for it; "" and nil for sub "".
func verified(t testing.TB, sub string) (string, map[string]string) {
	t.Helper()
	if sub == "" {
		return "", nil
	}
	tok, err := authorizer.Token(sub, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := authorizer.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	return tok, claims
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
