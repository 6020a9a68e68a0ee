package idemlambda_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// TestFunctionURLScopesAnAssumedRoleByItsRole: the same role in two STS
// sessions is one scope (a key kept across sessions replays), another role
// or an IAM user is another; the session's ARN stays in the event.
func TestFunctionURLScopesAnAssumedRoleByItsRole(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	var arns []string
	h := idemlambda.FunctionURL(f.Store, nil, func(ctx context.Context, req idemlambda.Request[events.LambdaFunctionURLRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
		runs.Add(1)
		arns = append(arns, req.Event.RequestContext.Authorizer.IAM.UserARN)
		return idem.Response{StatusCode: 201, Body: []byte(req.Scope)}, nil
	})
	send := func(arn string) events.LambdaFunctionURLResponse {
		ev := events.LambdaFunctionURLRequest{RawPath: "/jobs", Headers: map[string]string{"idempotency-key": "job-1"}, Body: `{}`}
		ev.RequestContext.HTTP.Method = "POST"
		ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: arn}}
		r, _ := h(context.Background(), ev)
		return r
	}
	first := send("arn:aws:sts::123456789012:assumed-role/batch/session-monday")
	again := send("arn:aws:sts::123456789012:assumed-role/batch/session-tuesday")
	if first.Body != "arn:aws:sts::123456789012:assumed-role/batch" || again.Headers[idemlambda.HeaderReplayed] != "true" || runs.Load() != 1 {
		t.Fatalf("two sessions of one role: %q, then %v after %d runs; want one scope, the role, and a replay", first.Body, again.Headers, runs.Load())
	}
	if arns[0] != "arn:aws:sts::123456789012:assumed-role/batch/session-monday" {
		t.Fatalf("the handler saw %q, want the session's own ARN", arns[0])
	}
	for _, other := range []string{"arn:aws:sts::123456789012:assumed-role/reports/session-monday", "arn:aws:iam::123456789012:user/alice", "arn:aws:sts::999999999999:assumed-role/batch/session-monday"} {
		if r := send(other); r.Headers[idemlambda.HeaderReplayed] != "" {
			t.Errorf("%s: replayed another principal's answer", other)
		}
	}
	if runs.Load() != 4 {
		t.Fatalf("%d runs, want one per principal", runs.Load())
	}
}

// TestIAMPrincipalKeepsPrincipalsApart: the role is the scope
// only for an STS assumed-role ARN, parsed field by field; distinct
// principals never share a scope (IAM paths may hold ':'; an Identity Center
// session is a person).
func TestIAMPrincipalKeepsPrincipalsApart(t *testing.T) {
	scope := func(arn string) string {
		ev := events.LambdaFunctionURLRequest{}
		ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: arn}}
		return idemlambda.IAMPrincipal(&ev)
	}
	for _, arn := range []string{
		"arn:aws:iam::123456789012:user/:assumed-role/ops/alice",
		"arn:aws:iam::123456789012:user/:assumed-role/ops/bob",
		"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/alice@example.com",
		"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/bob@example.com",
		"arn:aws:sts::123456789012:federated-user/bob",
		"arn:aws:sts::123456789012:assumed-role/r",
		"garbage:assumed-role/x/y",
	} {
		if got := scope(arn); got != arn {
			t.Errorf("%s: scope %q, want the ARN itself", arn, got)
		}
	}
	for arn, role := range map[string]string{
		"arn:aws-us-gov:sts::123456789012:assumed-role/r/s": "arn:aws-us-gov:sts::123456789012:assumed-role/r",
		"arn:aws-cn:sts::123456789012:assumed-role/r/s":     "arn:aws-cn:sts::123456789012:assumed-role/r",
	} {
		if got := scope(arn); got != role {
			t.Errorf("%s: scope %q, want %q", arn, got, role)
		}
	}
}
