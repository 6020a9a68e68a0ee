package idemlambda

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem/internal/door"
)

// FunctionURL wraps h for a Lambda function URL. The scope is by default
// IAMPrincipal, which Lambda verifies for a URL of auth type AWS_IAM; a URL
// of auth type NONE has no verified identity, so its requests are 401
// unless Options.Scope reads one (a token the function itself verified).
// The fingerprint takes the method, the raw path, the raw query and the
// body.
func FunctionURL[B any](s Doer, parse Parse[B], h Handler[events.LambdaFunctionURLRequest, B], optFns ...func(*Options[events.LambdaFunctionURLRequest])) func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	d := newDoor(s, parse, h, IAMPrincipal, optFns)
	return func(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		in := inbound(eventParts{ev.Headers, nil, &ev.Body, &ev.IsBase64Encoded}, d.MaxBody)
		in.Method, in.Route = ev.RequestContext.HTTP.Method, door.Route(ev.RawPath, nil, ev.RawQueryString)
		r := d.serve(ctx, &ev, in)
		out := events.LambdaFunctionURLResponse{StatusCode: r.StatusCode, Headers: door.CopyHeader(r.Header), Cookies: r.Cookies}
		out.Body, out.IsBase64Encoded = encodeBody(r.Body)
		return out, nil
	}
}

// IAMPrincipal is the IAM principal that signed a function URL's request
// ("" without AWS_IAM auth). For an assumed role it is the role
// ("arn:aws:sts::123456789012:assumed-role/batch"), not the session, whose
// name the caller chooses anew each time it assumes the role: a key kept
// across sessions stays in one scope. An IAM Identity Center role
// (AWSReservedSSO_…) keeps its session, whose name is the person signed
// in. Any other principal (an IAM user) is its ARN.
func IAMPrincipal(ev *events.LambdaFunctionURLRequest) string {
	a := ev.RequestContext.Authorizer
	if a == nil || a.IAM == nil {
		return ""
	}
	arn := a.IAM.UserARN
	// arn:PARTITION:sts::ACCOUNT:assumed-role/ROLE/SESSION
	f := strings.SplitN(arn, ":", 6)
	if len(f) != 6 || f[0] != "arn" || f[2] != "sts" {
		return arn
	}
	rest, ok := strings.CutPrefix(f[5], "assumed-role/")
	role, session, cut := strings.Cut(rest, "/")
	if !ok || !cut || role == "" || session == "" || strings.HasPrefix(role, "AWSReservedSSO_") {
		return arn
	}
	return strings.Join(f[:5], ":") + ":assumed-role/" + role
}
