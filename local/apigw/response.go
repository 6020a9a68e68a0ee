package apigw

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
)

// Response reads a function's output as API Gateway reads it for payload
// format 2.0 (http-api-develop-integrations-lambda.html, "Lambda function
// response for format 2.0"): a JSON object with a statusCode is the
// response; any other valid JSON is the body of a 200 response of
// content-type application/json, a JSON string giving its value. Output
// that is neither, or a statusCode that is no HTTP status, is an error
// (API Gateway's 500).
func Response(out []byte) (events.APIGatewayV2HTTPResponse, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(out, &fields) == nil && fields["statusCode"] != nil {
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("apigw: function response: %w", err)
		}
		if resp.StatusCode < 100 || resp.StatusCode > 599 {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("apigw: function response: statusCode %d", resp.StatusCode)
		}
		resp.MultiValueHeaders = nil // not a field of payload 2.0
		return resp, nil
	}
	if !json.Valid(out) {
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("apigw: function output is not JSON: %.100q", out)
	}
	body := string(out)
	var s string
	if json.Unmarshal(out, &s) == nil {
		body = s
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Headers: map[string]string{"content-type": "application/json"}, Body: body}, nil
}

// Write sends resp as API Gateway would: status, headers, each cookie as a
// set-cookie header, and the body decoded from base64 when it is marked so.
// Payload 2.0 has no multiValueHeaders: resp's are not sent
// (http-api-develop-integrations-lambda.html, "Payload format differences").
func Write(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) error {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			http.Error(w, `{"message":"Internal Server Error"}`, http.StatusInternalServerError)
			return err
		}
		body = b
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// ReadBody reads a request body up to limit bytes and one more, so that a
// caller can tell a body over the limit from one at it.
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	return io.ReadAll(io.LimitReader(r.Body, limit+1))
}
