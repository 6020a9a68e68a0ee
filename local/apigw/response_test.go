package apigw_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/apigw"
)

// request is what call sends: the method, the URL, the Content-Type
// ("" for none) and the body.
type request struct {
	method, url, contentType, body string
}

// call sends req to the API with a token of auth's, and returns the
// response's status, header and body (read and closed here).
func call(t *testing.T, auth *apigw.Authorizer, req request) (int, http.Header, string) {
	t.Helper()
	method, url, contentType, body := req.method, req.url, req.contentType, req.body
	r, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	tok, err := auth.Token("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// A function's output that is valid JSON without a statusCode is the body
// of a 200 application/json response; a JSON string gives its value. An
// object with a statusCode is the response itself
// (http-api-develop-integrations-lambda.html, "Lambda function response for
// format 2.0"). Output that is no response at all is API Gateway's 500.
func TestResponseInferredFromOutputWithoutStatusCode(t *testing.T) {
	auth := testAuthorizer()
	url := echoAPI(t, auth)
	cases := []struct {
		output      string
		status      int
		contentType string
		body        string
	}{
		{`{"order_id":"o-1","total":3}`, 200, "application/json", `{"order_id":"o-1","total":3}`},
		{`"Hello from Lambda!"`, 200, "application/json", "Hello from Lambda!"},
		{`[1,2]`, 200, "application/json", `[1,2]`},
		{`{"statusCode":201,"headers":{"content-type":"text/plain"},"body":"made"}`, 201, "text/plain", "made"},
		{`{"statusCode":"two hundred"}`, 500, "application/json", `{"message":"Internal Server Error"}`},
	}
	for _, c := range cases {
		status, header, body := call(t, auth, request{"POST", url + "/output", "application/json", c.output})
		if status != c.status || header.Get("Content-Type") != c.contentType || body != c.body {
			t.Errorf("output %s: %d %q %q; want %d %q %q", c.output, status, header.Get("Content-Type"), body, c.status, c.contentType, c.body)
		}
	}
}

// Payload format 2.0 has no multiValueHeaders: a response's are not
// applied. Its cookies each become a set-cookie header
// (http-api-develop-integrations-lambda.html, "Payload format differences").
func TestResponseMultiValueHeadersAreNotApplied(t *testing.T) {
	auth := testAuthorizer()
	url := echoAPI(t, auth)
	output := `{"statusCode":200,"headers":{"x-one":"1"},"multiValueHeaders":{"x-many":["a","b"]},"cookies":["c=1; Path=/","d=2"],"body":"ok"}`
	status, header, body := call(t, auth, request{"POST", url + "/output", "application/json", output})
	if status != 200 || body != "ok" || header.Get("X-One") != "1" {
		t.Fatalf("%d %q %v", status, body, header)
	}
	if got := header.Values("X-Many"); len(got) != 0 {
		t.Errorf("multiValueHeaders applied: x-many %q", got)
	}
	if got := header.Values("Set-Cookie"); !slices.Equal(got, []string{"c=1; Path=/", "d=2"}) {
		t.Errorf("set-cookie %q, want one header per cookie", got)
	}
}
