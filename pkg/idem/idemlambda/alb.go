package idemlambda

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/internal/door"
)

// ALB wraps h for an Application Load Balancer's Lambda target, with
// multi-value headers on or off: the answer takes the form the request
// came in. An ALB verifies no identity of its own for a Lambda target, so
// Options.Scope is required (every request is 401 without it):
// ALBOIDCIdentity behind an authenticate rule. The fingerprint takes the
// method, the path, the query and the body. With multi-value headers off,
// an answer carries one Set-Cookie: the last of Response.Cookies, or else
// its Set-Cookie header; with them on, the header's and then Cookies.
func ALB[B any](s Doer, parse Parse[B], h Handler[events.ALBTargetGroupRequest, B], optFns ...func(*Options[events.ALBTargetGroupRequest])) func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	d := newDoor(s, parse, h, nil, optFns)
	return func(ctx context.Context, ev events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		in := inbound(eventParts{ev.Headers, ev.MultiValueHeaders, &ev.Body, &ev.IsBase64Encoded}, d.MaxBody)
		query := rawQuery(ev.QueryStringParameters, ev.MultiValueQueryStringParameters)
		in.Method, in.Route = ev.HTTPMethod, door.Route(ev.Path, nil, query)
		return toALB(d.serve(ctx, &ev, in), ev.MultiValueHeaders != nil), nil
	}
}

// ALBOIDCIdentity is the subject an ALB authenticate rule verified, in the
// x-amzn-oidc-identity header. Choose it only for a listener rule that
// authenticates: the ALB then overwrites the header whatever the client
// sent.
func ALBOIDCIdentity(ev *events.ALBTargetGroupRequest) string {
	v, _ := headerValue(ev.Headers, ev.MultiValueHeaders, "x-amzn-oidc-identity")
	return v
}

func toALB(r idem.Response, multiValue bool) events.ALBTargetGroupResponse {
	out := events.ALBTargetGroupResponse{StatusCode: r.StatusCode, StatusDescription: strconv.Itoa(r.StatusCode) + " " + http.StatusText(r.StatusCode)}
	out.Body, out.IsBase64Encoded = encodeBody(r.Body)
	if !multiValue { // one value each, one cookie
		out.Headers = door.CopyHeader(r.Header)
		if len(r.Cookies) > 0 {
			out.Headers["Set-Cookie"] = r.Cookies[len(r.Cookies)-1]
		}
		return out
	}
	out.MultiValueHeaders = make(map[string][]string, len(r.Header)+1)
	cookie := "Set-Cookie"
	for k, v := range r.Header {
		if strings.EqualFold(k, cookie) {
			cookie = k // the handler's own spelling: its cookie and Cookies go in one list, none lost
		}
		out.MultiValueHeaders[k] = []string{v}
	}
	if len(r.Cookies) > 0 {
		out.MultiValueHeaders[cookie] = append(out.MultiValueHeaders[cookie], r.Cookies...)
	}
	return out
}
