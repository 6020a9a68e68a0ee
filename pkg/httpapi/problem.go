package httpapi

import (
	"encoding/json"
	"maps"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
)

// ContentType is the media type of problem details (RFC 9457).
const ContentType = "application/problem+json"

// TypeBase is the base of every problem's type URI: the type of the problem
// with code c is TypeBase + c, documented in the README's error table.
const TypeBase = "https://github.com/idemkeys/idem/blob/main/README.md#problem-"

// titles are the short, fixed summaries of the codes; a code not listed has
// its status's text as its title.
var titles = map[string]string{
	"unauthenticated":         "Not authenticated",
	"idempotency_key_missing": "Idempotency-Key missing",
	"idempotency_key_invalid": "Idempotency-Key invalid",
	"idempotency_key_reused":  "Idempotency-Key reused with another request",
	"request_in_progress":     "Request in progress",
	"invalid_json":            "Invalid JSON body",
	"invalid_body":            "Invalid body",
	"invalid_request":         "Invalid request",
	"body_too_large":          "Body too large",
	"result_too_large":        "Result too large to store",
	"invalid_write":           "Writes cannot be committed",
	"timeout":                 "Timed out",
	"internal_error":          "Internal error",
	"not_found":               "Not found",
	"route_not_found":         "No such route",
}

// Problem is an RFC 9457 problem details object as the IETF Idempotency-Key
// draft shows it, plus a stable machine-readable Code. Extra holds more
// members (a decline's decline_code); it cannot replace the standard ones.
type Problem struct {
	Type   string
	Title  string
	Status int
	Detail string
	Code   string
	Extra  map[string]any
}

// NewProblem is the problem of code at status, with detail for this occurrence.
func NewProblem(status int, code, detail string) Problem {
	title, ok := titles[code]
	if !ok {
		title = http.StatusText(status)
	}
	return Problem{Type: TypeBase + code, Title: title, Status: status, Detail: detail, Code: code}
}

// JSON is the problem's body.
func (p Problem) JSON() []byte {
	m := make(map[string]any, len(p.Extra)+5)
	maps.Copy(m, p.Extra)
	m["type"], m["title"], m["status"], m["detail"], m["code"] = p.Type, p.Title, p.Status, p.Detail, p.Code
	b, _ := json.Marshal(m) // strings, ints and the caller's plain values
	return b
}

// Response renders the problem for API Gateway.
func (p Problem) Response() events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: p.Status,
		Headers:    map[string]string{"Content-Type": ContentType},
		Body:       string(p.JSON()),
	}
}

// ErrorResponse is a problem details response with a stable code.
func ErrorResponse(status int, code, detail string) events.APIGatewayV2HTTPResponse {
	return NewProblem(status, code, detail).Response()
}

// Code reads the code member of a problem details body ("" if none).
func Code(body []byte) string {
	var p struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(body, &p) != nil {
		return ""
	}
	return p.Code
}
