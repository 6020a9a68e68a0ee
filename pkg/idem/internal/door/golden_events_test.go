package door_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem/idemhttp"
)

// The requests whose fingerprints are pinned, one set per door: routes and
// raw paths, queries, base64 bodies, content types, header forms.

func sp(s string) *string { return &s }

func goldenHTTPAPIEvents() []events.APIGatewayV2HTTPRequest {
	// mk is the event with fields in this order: the route key, the raw
	// path and query, the body, base64 or not, the headers, the path
	// parameters; its method is POST.
	type fields struct {
		route, raw, q, body string
		b64                 bool
		hd, pp              map[string]string
	}
	mk := func(f fields) events.APIGatewayV2HTTPRequest {
		ev := events.APIGatewayV2HTTPRequest{RouteKey: f.route, RawPath: f.raw, RawQueryString: f.q, Body: f.body, IsBase64Encoded: f.b64, Headers: f.hd, PathParameters: f.pp}
		ev.RequestContext.HTTP.Method = "POST"
		return ev
	}
	return []events.APIGatewayV2HTTPRequest{
		mk(fields{"POST /things/{id}", "/prod/things/t1", "b=2&a=1", `{"b": 1, "a": [1,2]}`, false, map[string]string{"idempotency-key": "k1"}, map[string]string{"id": "t1"}}),
		mk(fields{"$default", "/x/y", "", `{"a":1}`, false, map[string]string{"idempotency-key": "k1", "content-type": "application/json; charset=utf-8"}, nil}),
		mk(fields{"POST /bin", "/bin", "", base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0x01}), true, map[string]string{"idempotency-key": "k1", "content-type": "application/octet-stream"}, nil}),
		mk(fields{"POST /txt", "/txt", "", `{"a": 1}`, false, map[string]string{"Idempotency-Key": `"k1"`, "Content-Type": "text/plain"}, nil}),
		mk(fields{"POST /empty", "/empty", "q", ``, false, map[string]string{"idempotency-key": "k1"}, nil}),
		mk(fields{"POST /b64json", "/b64json", "", base64.StdEncoding.EncodeToString([]byte(`{"z":1,"a":2}`)), true, map[string]string{"idempotency-key": "k1", "content-type": "application/vnd.api+json"}, nil}),
	}
}

func goldenRESTEvents() []events.APIGatewayProxyRequest {
	auth := map[string]any{"claims": map[string]any{"sub": "alice"}}
	ev1 := events.APIGatewayProxyRequest{Resource: "/things/{id}", Path: "/prod/things/t1", HTTPMethod: "POST", PathParameters: map[string]string{"id": "t1"},
		Headers: map[string]string{"Idempotency-Key": "k1"}, QueryStringParameters: map[string]string{"a": "1", "b": "x y"},
		MultiValueQueryStringParameters: map[string][]string{"a": {"1", "3"}, "b": {"x y"}}, Body: `{"b":1,"a":2}`}
	ev1.RequestContext.Authorizer = auth
	ev2 := events.APIGatewayProxyRequest{Resource: "/things", Path: "/things", HTTPMethod: "PUT",
		MultiValueHeaders: map[string][]string{"Idempotency-Key": {"k1"}, "Content-Type": {"text/plain"}}, Body: base64.StdEncoding.EncodeToString([]byte("hello")), IsBase64Encoded: true}
	ev2.RequestContext.Authorizer = auth
	return []events.APIGatewayProxyRequest{ev1, ev2}
}

func goldenURLEvents() []events.LambdaFunctionURLRequest {
	mk := func(path, q, body string, b64 bool, hd map[string]string) events.LambdaFunctionURLRequest {
		ev := events.LambdaFunctionURLRequest{RawPath: path, RawQueryString: q, Body: body, IsBase64Encoded: b64, Headers: hd}
		ev.RequestContext.HTTP.Method = "post"
		ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:sts::123456789012:assumed-role/batch/s1"}}
		return ev
	}
	return []events.LambdaFunctionURLRequest{
		mk("/things/", "x=1", `{"b":1, "a":2}`, false, map[string]string{"idempotency-key": "k1"}),
		mk("/bin", "", base64.StdEncoding.EncodeToString([]byte{0xfe, 0xff}), true, map[string]string{"idempotency-key": "k1", "content-type": "image/png"}),
	}
}

func goldenALBEvents() []events.ALBTargetGroupRequest {
	single := events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/things/t1", QueryStringParameters: map[string]string{"q": "1"},
		Headers: map[string]string{"idempotency-key": "k1", "x-amzn-oidc-identity": "alice"}, Body: `{"b":1,"a":2}`}
	multi := events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/things/t1", MultiValueQueryStringParameters: map[string][]string{"q": {"1", "2"}},
		MultiValueHeaders: map[string][]string{"idempotency-key": {"k1"}, "x-amzn-oidc-identity": {"alice"}, "content-type": {"text/csv"}}, Body: base64.StdEncoding.EncodeToString([]byte("a,b\n")), IsBase64Encoded: true}
	return []events.ALBTargetGroupRequest{single, multi}
}

func goldenNetHTTPRequests() []*http.Request {
	r1 := httptest.NewRequest("POST", "/things/t1?b=2&a=1", strings.NewReader(`{"b": 1, "a": 2}`))
	r1.Header.Set(idemhttp.HeaderIdempotencyKey, "k1")
	r2 := httptest.NewRequest("PUT", "/files/a/b/c", strings.NewReader("raw bytes"))
	r2.Header.Set(idemhttp.HeaderIdempotencyKey, "k1")
	r2.Header.Set("Content-Type", "text/plain")
	r3 := httptest.NewRequest("PATCH", "/raw/x/y?z", strings.NewReader(""))
	r3.Header.Set(idemhttp.HeaderIdempotencyKey, "k1")
	return []*http.Request{r1, r2, r3}
}

func goldenSQSMessages() []events.SQSMessage {
	return []events.SQSMessage{
		{MessageId: "m1", Body: `{"b":1, "a":2}`, MessageAttributes: map[string]events.SQSMessageAttribute{"eid": {StringValue: sp("e1"), DataType: "String"}}},
		{MessageId: "m2", Body: "not json \xff", MessageAttributes: map[string]events.SQSMessageAttribute{"eid": {StringValue: sp("e2"), DataType: "String"}}},
	}
}

func goldenEBEvents() []events.CloudWatchEvent {
	return []events.CloudWatchEvent{
		{ID: "e1", Source: "orders", DetailType: "OrderPlaced", Detail: []byte(`{"b":1, "a":2}`)},
		{ID: "e2", Source: "a/b", DetailType: "c", Detail: []byte(`{}`)},
	}
}
