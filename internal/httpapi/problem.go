package httpapi

import (
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem/idemhttp"
)

// ContentType is the media type of problem details (RFC 9457), as the
// doors send it.
const ContentType = "application/problem+json"

// Problem is an RFC 9457 problem details object as the doors render it
// (idemhttp.Problem: type, title, status, detail and a stable code), plus
// Extra, more members of the example's own (a decline's decline_code),
// which cannot replace the standard ones.
type Problem struct {
	Base   string // the base of the type URI, as the doors' ProblemBase
	Status int
	Code   string
	Detail string
	Extra  map[string]any
}

// NewProblem is the problem of code at status, with detail for this
// occurrence. Its type is RFC 9457's "about:blank", whose title is the
// status's text; WithBase gives it a type of its own.
func NewProblem(status int, code, detail string) Problem {
	return Problem{Status: status, Code: code, Detail: detail}
}

// WithBase is p with the type base + p.Code and the code's own title, so
// that the type URI names a document about the code (base "" leaves p as
// it is).
func (p Problem) WithBase(base string) Problem {
	p.Base = base
	return p
}

// JSON is the problem's body: the doors' own, with Extra's members added.
func (p Problem) JSON() []byte {
	body := idemhttp.Problem(p.Base, p.Status, p.Code, p.Detail).Body
	if len(p.Extra) == 0 {
		return body
	}
	m := make(map[string]any, len(p.Extra)+5)
	_ = json.Unmarshal(body, &m) // the doors' own JSON object
	for k, v := range p.Extra {
		if _, standard := m[k]; !standard {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m) // the doors' members and the caller's plain values
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
