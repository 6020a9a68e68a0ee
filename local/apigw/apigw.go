// Package apigw is API Gateway's HTTP API on this machine, as `sam local
// start-api` serves it: the template's routes on a ServeMux, the JWT
// authorizer, HTTP requests turned into payload 2.0 events and the
// functions' responses back, each function invoked on its bootstrap under
// the Lambda Runtime Interface Emulator (a rie.Pool). Tests use the event
// conversion and Match on their own.
//
// Each behaviour cites the page of API Gateway's developer guide
// (https://docs.aws.amazon.com/apigateway/latest/developerguide/) that
// describes it.
package apigw

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/local/template"
)

// Event is the payload 2.0 event for r on route, as API Gateway builds it
// (http-api-develop-integrations-lambda.html): header names lowercased and
// repeated values joined with commas, the headers API Gateway adds, cookies
// apart and as sent, the raw path still encoded and the raw query, path
// parameters decoded, a body in base64 unless its media type is text, and
// the JWT claims of the verified token (nil claims: no authorizer context).
func Event(r *http.Request, body []byte, route template.Route, params map[string]string, claims map[string]string) events.APIGatewayV2HTTPRequest {
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = map[string]string{}
		for k, v := range q {
			query[k] = strings.Join(v, ",")
		}
	}
	now := time.Now()
	domain := hostname(r.Host)
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              route.Method + " " + route.Path,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies(r.Header),
		Headers:               headers(r, now),
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     route.Method + " " + route.Path,
			AccountID:    "123456789012",
			APIID:        "local",
			Stage:        "$default",
			RequestID:    strconv.FormatInt(now.UnixNano(), 36),
			DomainName:   domain,
			DomainPrefix: strings.SplitN(domain, ".", 2)[0],
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP:         events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.EscapedPath(), Protocol: r.Proto, SourceIP: sourceIP(r), UserAgent: r.UserAgent()},
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

// headers are r's headers as the function sees them: names lowercased,
// repeated values joined with commas, the Cookie header left for cookies,
// and what API Gateway adds: host (Go's server keeps it apart),
// x-forwarded-for (the caller's address after any it sent),
// x-forwarded-proto, x-forwarded-port and x-amzn-trace-id (the caller's, or
// a new one in X-Ray's format).
func headers(r *http.Request, now time.Time) map[string]string {
	h := map[string]string{}
	for name, values := range r.Header {
		if !strings.EqualFold(name, "Cookie") {
			h[strings.ToLower(name)] = strings.Join(values, ",")
		}
	}
	h["host"] = r.Host
	if prior := h["x-forwarded-for"]; prior != "" {
		h["x-forwarded-for"] = prior + ", " + sourceIP(r)
	} else {
		h["x-forwarded-for"] = sourceIP(r)
	}
	proto, port := "http", "80"
	if r.TLS != nil {
		proto, port = "https", "443"
	}
	if _, p, err := net.SplitHostPort(r.Host); err == nil {
		port = p
	}
	h["x-forwarded-proto"], h["x-forwarded-port"] = proto, port
	if h["x-amzn-trace-id"] == "" {
		h["x-amzn-trace-id"] = newTraceID(now)
	}
	return h
}

// newTraceID is an X-Ray trace id: Root=1-<epoch seconds, 8 hex>-<96 random
// bits, 24 hex>.
func newTraceID(now time.Time) string {
	b := make([]byte, 12)
	rand.Read(b)
	return fmt.Sprintf("Root=1-%08x-%s", now.Unix(), hex.EncodeToString(b))
}

// cookies are the cookies of the Cookie headers, each as the caller sent it
// ("name=value", quotes and all, whether or not Go would parse it).
func cookies(h http.Header) []string {
	var out []string
	for _, line := range h.Values("Cookie") {
		for _, c := range strings.Split(line, ";") {
			if c = strings.TrimSpace(c); c != "" {
				out = append(out, c)
			}
		}
	}
	return out
}

// hostname is host without its port.
func hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// isText reports whether a body of contentType travels as text: a media
// type of text/*, application/json, application/xml or
// application/javascript, and valid UTF-8. Every other type, and none, is
// base64-encoded ("If the content type of the request is binary, the body
// is base64-encoded", http-api-develop-integrations-lambda.html; the guide
// does not list the text types, these are the ones HTTP APIs were seen to
// send as text, application/x-www-form-urlencoded not among them).
func isText(contentType string, body []byte) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || !utf8.Valid(body) {
		return false
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript":
		return true
	}
	return strings.HasPrefix(mt, "text/")
}

func sourceIP(r *http.Request) string {
	return hostname(r.RemoteAddr)
}
