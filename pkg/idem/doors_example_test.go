package idem_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
)

type greeting struct {
	Name string `json:"name"`
}

func parseGreeting(body []byte) (greeting, *httpapi.Refusal) {
	var g greeting
	if err := json.Unmarshal(body, &g); err != nil || g.Name == "" {
		return g, &httpapi.Refusal{StatusCode: 400, Code: "invalid_request", Message: "name is required"}
	}
	return g, nil
}

func ExampleHTTPTyped() {
	db, table, _ := exampleTables()
	store, _ := idem.New(db, table)
	handler := idem.HTTPTyped(store, parseGreeting, func(ctx context.Context, req idem.HTTPRequest[greeting], tx *idem.Tx) (events.APIGatewayV2HTTPResponse, error) {
		// The body parsed once, before the claim; scope and key as fields.
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Body: "hello " + req.Body.Name + " from " + req.Scope}, nil
	})
	req := apiRequest("user-42", map[string]string{"idempotency-key": "g-1"}, `{"name":"Ada"}`)
	for range 2 {
		resp, _ := handler(context.Background(), req)
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Body, resp.Headers[idem.HeaderReplayed])
	}
	bad, _ := handler(context.Background(), apiRequest("user-42", map[string]string{"idempotency-key": "g-2"}, `{}`))
	fmt.Println(bad.StatusCode, bad.Headers["Content-Type"], httpapi.Code([]byte(bad.Body)))
	// Output:
	// 201 hello Ada from user-42 replayed=""
	// 201 hello Ada from user-42 replayed="true"
	// 400 application/problem+json invalid_request
}

// parseJSON is a Parse for any body that is a JSON object of type B: a
// body that does not decode is a 400, refused before the key is claimed.
func parseJSON[B any](body []byte) (B, *httpapi.Refusal) {
	var v B
	if err := json.Unmarshal(body, &v); err != nil {
		return v, &httpapi.Refusal{StatusCode: 400, Code: "invalid_request", Message: err.Error()}
	}
	return v, nil
}

func ExampleFunctionURL() {
	db, table, _ := exampleTables()
	store, _ := idem.New(db, table)
	type job struct {
		Report string `json:"report"`
	}
	// An AWS_IAM function URL: the scope is the signing principal, the body
	// a job, parsed once before the claim.
	handler := idem.FunctionURL(store, parseJSON[job], func(ctx context.Context, req idem.Req[events.LambdaFunctionURLRequest, job], tx *idem.Tx) (events.LambdaFunctionURLResponse, error) {
		return events.LambdaFunctionURLResponse{StatusCode: 201, Body: req.Body.Report + " queued for " + req.Scope}, nil
	})
	ev := events.LambdaFunctionURLRequest{RawPath: "/jobs", Headers: map[string]string{"idempotency-key": "j-1"}, Body: `{"report":"sales"}`}
	ev.RequestContext.HTTP.Method = "POST"
	ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
		IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::123456789012:role/batch"},
	}
	for range 2 {
		resp, _ := handler(context.Background(), ev)
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Body, resp.Headers[idem.HeaderReplayed])
	}
	ev.Headers["idempotency-key"], ev.Body = "j-2", `{"report":7}`
	bad, _ := handler(context.Background(), ev)
	fmt.Println(bad.StatusCode, bad.Headers["Content-Type"], httpapi.Code([]byte(bad.Body)))
	// Output:
	// 201 sales queued for arn:aws:iam::123456789012:role/batch replayed=""
	// 201 sales queued for arn:aws:iam::123456789012:role/batch replayed="true"
	// 400 application/problem+json invalid_request
}

func ExampleRESTAPI() {
	db, table, _ := exampleTables()
	store, _ := idem.New(db, table)
	type order struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	}
	// A REST API with a Lambda authorizer: the scope is the principal it
	// returned; the body an order.
	handler := idem.RESTAPI(store, parseJSON[order], func(ctx context.Context, req idem.Req[events.APIGatewayProxyRequest, order], tx *idem.Tx) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{StatusCode: 201, Body: fmt.Sprintf("%d x %s for %s", req.Body.Qty, req.Body.SKU, req.Scope)}, nil
	}, func(o *idem.DoorOptions[events.APIGatewayProxyRequest]) { o.Scope = idem.RESTAuthorizer("principalId") })
	ev := events.APIGatewayProxyRequest{Resource: "/orders", HTTPMethod: "POST", Headers: map[string]string{"Idempotency-Key": "o-1"}, Body: `{"sku":"tea","qty":2}`}
	ev.RequestContext.Authorizer = map[string]any{"principalId": "tenant-7"}
	for range 2 {
		resp, _ := handler(context.Background(), ev)
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Body, resp.Headers[idem.HeaderReplayed])
	}
	// Output:
	// 201 2 x tea for tenant-7 replayed=""
	// 201 2 x tea for tenant-7 replayed="true"
}

func ExampleALB() {
	db, table, _ := exampleTables()
	store, _ := idem.New(db, table)
	type payment struct {
		Cents int `json:"cents"`
	}
	// A listener rule that authenticates with OIDC: the ALB sets the
	// identity; the body is a payment.
	handler := idem.ALB(store, parseJSON[payment], func(ctx context.Context, req idem.Req[events.ALBTargetGroupRequest, payment], tx *idem.Tx) (events.ALBTargetGroupResponse, error) {
		return events.ALBTargetGroupResponse{StatusCode: 201, Body: fmt.Sprintf("paid %d for %s", req.Body.Cents, req.Scope)}, nil
	}, func(o *idem.DoorOptions[events.ALBTargetGroupRequest]) { o.Scope = idem.ALBOIDCIdentity })
	ev := events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/pay", Body: `{"cents":500}`, MultiValueHeaders: map[string][]string{
		"idempotency-key": {"p-1"}, "x-amzn-oidc-identity": {"user-9"},
	}}
	for range 2 {
		resp, _ := handler(context.Background(), ev)
		fmt.Println(resp.StatusCode, resp.StatusDescription, resp.Body, resp.MultiValueHeaders[idem.HeaderReplayed])
	}
	// Output:
	// 201 201 Created paid 500 for user-9 []
	// 201 201 Created paid 500 for user-9 [true]
}

func ExampleStore_Middleware() {
	db, table, _ := exampleTables()
	store, _ := idem.New(db, table)
	type user struct{}
	mw := store.Middleware(func(o *idem.MiddlewareOptions) {
		// What the authentication middleware in front verified.
		o.Scope = func(r *http.Request) string { u, _ := r.Context().Value(user{}).(string); return u }
	})
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/ship", mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = idem.TxFrom(r.Context()) // add the business writes here
		var in struct {
			Carrier string `json:"carrier"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil { // the body the middleware read, handed back
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "shipped "+r.PathValue("id")+" by "+in.Carrier)
	})))
	for range 2 {
		r := httptest.NewRequest("POST", "/orders/o-1/ship", strings.NewReader(`{"carrier":"dhl"}`))
		r.Header.Set("Idempotency-Key", "s-1")
		r = r.WithContext(context.WithValue(r.Context(), user{}, "user-42"))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		fmt.Printf("%d %s replayed=%q\n", rec.Code, rec.Body.String(), rec.Header().Get(idem.HeaderReplayed))
	}
	// Output:
	// 201 shipped o-1 by dhl replayed=""
	// 201 shipped o-1 by dhl replayed="true"
}

func ExampleFunction() {
	db, table, _ := exampleTables()
	store, _ := idem.New(db, table)
	type task struct{ ExecutionID, OrderID string }
	type result struct{ Label string }
	handler, _ := idem.Function(store, func(ctx context.Context, in task) (result, error) {
		return result{Label: "label-for-" + in.OrderID}, nil
	}, func(o *idem.FunctionOptions[task]) {
		o.Scope = "label-printer"
		o.Key = func(in task) string { return in.ExecutionID } // Powertools' event_key_jmespath, typed
	})
	for range 2 { // lambda.Start(handler); Step Functions retries the state
		out, err := handler(context.Background(), task{ExecutionID: "exec-1", OrderID: "o-1"})
		fmt.Println(out.Label, err)
	}
	// Output:
	// label-for-o-1 <nil>
	// label-for-o-1 <nil>
}
