package httpapi

import (
	"encoding/json"
	"maps"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
)

// ContentType is the media type of problem details (RFC 9457).
const ContentType = "application/problem+json"

// titles are the short, fixed summaries of the codes, for a problem whose
// type is its own (WithBase); a code not listed has its status's text.
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

// NewProblem is the problem of code at status, with detail for this
// occurrence. Its type is RFC 9457's "about:blank", whose title is the
// status's text; WithBase gives it a type of its own.
func NewProblem(status int, code, detail string) Problem {
	return Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Code: code}
}

// WithBase is p with the type base + p.Code and the code's own title, so
// that the type URI names a document about the code (base "" leaves p as
// it is).
func (p Problem) WithBase(base string) Problem {
	if base == "" {
		return p
	}
	p.Type = base + p.Code
	if title, ok := titles[p.Code]; ok {
		p.Title = title
	}
	return p
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
