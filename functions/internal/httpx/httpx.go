// Package httpx is what the HTTP API functions share to answer requests:
// routing by API Gateway route key, JSON responses, strict JSON bodies, 400
// refusals, and reading the caller's own item for GET /<things>/{id}.
package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkeys/idem/internal/httpapi"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// ProblemBase is the base of the functions' problem types: the type of code
// c is ProblemBase + c, a section of docs/http-api.md.
const ProblemBase = "https://github.com/idemkeys/idem/blob/main/docs/http-api.md#"

// Problem is the problem of code at status, its type documented under
// ProblemBase.
func Problem(status int, code, detail string) httpapi.Problem {
	return httpapi.NewProblem(status, code, detail).WithBase(ProblemBase)
}

// ErrorResponse is Problem as an HTTP API response.
func ErrorResponse(status int, code, detail string) events.APIGatewayV2HTTPResponse {
	return Problem(status, code, detail).Response()
}

// Refused is a refusal as an HTTP API response.
func Refused(r *idemlambda.Refusal) events.APIGatewayV2HTTPResponse {
	return ErrorResponse(r.StatusCode, r.Code, r.Message)
}

// Stored is an HTTP API response as a door's handler returns it.
func Stored(r events.APIGatewayV2HTTPResponse) idem.Response {
	return idem.Response{StatusCode: r.StatusCode, Header: r.Headers, Cookies: r.Cookies, Body: []byte(r.Body)}
}

// Handler is an HTTP API route's handler, what lambda.Start takes.
type Handler = func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Routes maps API Gateway route keys ("POST /charges", "GET /charges/{id}")
// to handlers. Its keys are what template.yaml's HttpApi events declare; a
// test checks that the two agree.
type Routes map[string]Handler

// Handle dispatches on the route key, which API Gateway (and sam local)
// sets to the matched route's "METHOD /path".
func (r Routes) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	h, ok := r[req.RouteKey]
	if !ok {
		return ErrorResponse(http.StatusNotFound, "route_not_found", "no route "+req.RouteKey), nil
	}
	return h(ctx, req)
}

// JSON renders v as a JSON response.
func JSON(status int, v any) events.APIGatewayV2HTTPResponse {
	b, err := json.Marshal(v)
	if err != nil {
		return ErrorResponse(http.StatusInternalServerError, "internal_error", "response could not be encoded")
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(b)}
}

// DecodeStrict decodes one JSON object into v, refusing unknown fields and
// trailing data, with a message fit for a client.
func DecodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("the body is empty; a JSON object is expected")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fmt.Errorf("field %q must be %s, not %s", typeErr.Field, typeErr.Type, typeErr.Value)
		}
		return fmt.Errorf("not a valid JSON object: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON object")
	}
	return nil
}

// Invalid is a 400 refusal with code "invalid_request".
func Invalid(format string, args ...any) *idemlambda.Refusal {
	return &idemlambda.Refusal{StatusCode: http.StatusBadRequest, Code: "invalid_request", Message: fmt.Sprintf(format, args...)}
}

// Reader is the read the GET routes make.
type Reader interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// ID is the form of the ids in paths: charge and order ids.
var ID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// OwnItems reads the callers' own items of one table, keyed by (scope, id),
// for GET /<things>/{id}.
type OwnItems struct {
	DB      Reader
	Table   string
	Claim   string       // the JWT claim that names the caller, whose value is the scope
	IDParam string       // the path parameter that holds the id
	IDAttr  string       // the table's sort key attribute, which holds the id
	Log     *slog.Logger // nil: nothing logged
}

// Get answers GET /<things>/{id} for the caller: the item of (scope, id),
// decoded into v and rendered by render, or 404. Another caller's item is
// 404 too, the same as none, so that ids cannot be probed across tenants.
func (o OwnItems) Get(ctx context.Context, req events.APIGatewayV2HTTPRequest, v any, render func() any) events.APIGatewayV2HTTPResponse {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	scope, _, refusal := httpapi.CheckRequest(&req, o.Claim, 0)
	if refusal != nil {
		return Refused(refusal)
	}
	id := req.PathParameters[o.IDParam]
	if !ID.MatchString(id) {
		return ErrorResponse(http.StatusNotFound, "not_found", "no such "+o.IDParam)
	}
	out, err := o.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(o.Table),
		Key: map[string]types.AttributeValue{
			"scope":  &types.AttributeValueMemberS{Value: scope},
			o.IDAttr: &types.AttributeValueMemberS{Value: id},
		},
	})
	if err != nil {
		o.Log.Error("read", "table", o.Table, "error", err.Error())
		return ErrorResponse(http.StatusServiceUnavailable, "internal_error", "could not read; retry")
	}
	if len(out.Item) == 0 {
		return ErrorResponse(http.StatusNotFound, "not_found", "no such "+o.IDParam)
	}
	if err := attributevalue.UnmarshalMap(out.Item, v); err != nil {
		o.Log.Error("decode", "table", o.Table, "error", err.Error())
		return ErrorResponse(http.StatusInternalServerError, "internal_error", "could not read")
	}
	return JSON(http.StatusOK, render())
}
