package contract_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemkeys/idem/local/contract"
)

// TestTheDescriptionIsAValidOpenAPIDocument holds openapi.yaml to the
// OpenAPI 3.1 schema, as the validator reads it.
func TestTheDescriptionIsAValidOpenAPIDocument(t *testing.T) {
	if err := contract.Document(); err != nil {
		t.Fatal(err)
	}
}

// answer is the response of an exchange: its status, Content-Type and
// body.
type answer struct {
	status   int
	ctype    string
	respBody string
}

// exchange is a request of method on path with reqBody, answered with a.
func exchange(method, path, reqBody string, a answer) contract.Exchange {
	status, ctype, respBody := a.status, a.ctype, a.respBody
	req := httptest.NewRequest(method, "http://127.0.0.1:3000"+path, strings.NewReader(reqBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer x")
	req.Header.Set("Idempotency-Key", "k-1")
	resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ctype}}}
	return contract.Exchange{Request: req, RequestBody: []byte(reqBody), Response: resp, ResponseBody: []byte(respBody)}
}

// TestCheckRefusesAnAnswerTheDescriptionDoesNotAllow: an answer with a
// status, a body or a content type that openapi.yaml does not describe for
// its route fails Check; one it describes passes.
func TestCheckRefusesAnAnswerTheDescriptionDoesNotAllow(t *testing.T) {
	order := `{"items":[{"sku":"tea","quantity":2}]}`
	created := `{"id":"ord_1","object":"order","items":[{"sku":"tea","quantity":2}],"status":"created","created":1}`
	if err := contract.Check(exchange("POST", "/orders", order, answer{201, "application/json", created})); err != nil {
		t.Fatalf("a described answer: %v", err)
	}
	for name, x := range map[string]contract.Exchange{
		"a status not described":                    exchange("POST", "/orders", order, answer{418, "application/json", created}),
		"a body missing a member":                   exchange("POST", "/orders", order, answer{201, "application/json", `{"id":"ord_1","object":"order","status":"created","created":1}`}),
		"a content type not described":              exchange("POST", "/orders", order, answer{201, "text/plain", created}),
		"a 401 neither problem nor gateway message": exchange("GET", "/orders/o-1", "", answer{401, "application/json", `{"error":"no"}`}),
		"a refused request accepted":                exchange("POST", "/orders", `{"items":[]}`, answer{201, "application/json", created}),
	} {
		if err := contract.Check(x); err == nil {
			t.Errorf("%s: Check passed it", name)
		}
	}
}
