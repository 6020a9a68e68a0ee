// Package apigw is API Gateway's HTTP API on this machine, as `sam local
// start-api` serves it: the template's routes on a ServeMux, the JWT
// authorizer, HTTP requests turned into payload 2.0 events and the
// functions' responses back, each function invoked on its bootstrap under
// the Lambda Runtime Interface Emulator (a rie.Pool). Tests use the event
// conversion and Match on their own.
package apigw

import (
	"encoding/base64"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/local/template"
)

// Event is the payload 2.0 event for r on route: header names lowercased
// and repeated values joined with commas, cookies apart, the raw path and
// query, path parameters, a body in base64 unless it is text, and the JWT
// claims of the verified token (nil claims: no authorizer context).
func Event(r *http.Request, body []byte, route template.Route, params map[string]string, claims map[string]string) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	for name, values := range r.Header {
		if strings.EqualFold(name, "Cookie") {
			continue
		}
		headers[strings.ToLower(name)] = strings.Join(values, ",")
	}
	var cookies []string
	for _, c := range r.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = map[string]string{}
		for k, v := range q {
			query[k] = strings.Join(v, ",")
		}
	}
	now := time.Now()
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              route.Method + " " + route.Path,
		RawPath:               r.URL.Path,
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:   route.Method + " " + route.Path,
			AccountID:  "123456789012",
			APIID:      "local",
			Stage:      "$default",
			RequestID:  strconv.FormatInt(now.UnixNano(), 36),
			DomainName: r.Host,
			Time:       now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:  now.UnixMilli(),
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: sourceIP(r), UserAgent: r.UserAgent()},
		},
	}
	if claims != nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
		}
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type"), body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// isText is API Gateway's rule in spirit: text media types (and none given)
// travel as text when they are UTF-8; everything else as base64.
func isText(contentType string, body []byte) bool {
	if !utf8.Valid(body) {
		return false
	}
	if contentType == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/x-www-form-urlencoded" || mt == "application/xml"
}

func sourceIP(r *http.Request) string {
	host := r.RemoteAddr
	if i := strings.LastIndex(host, ":"); i >= 0 {
		host = host[:i]
	}
	return strings.Trim(host, "[]")
}

// Write sends resp as API Gateway would: status, headers, cookies, and the
// body decoded from base64 when it is marked so.
func Write(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) error {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
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
