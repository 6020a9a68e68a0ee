// Package samlocal runs the HTTP API functions under the SAM CLI, whose
// sam local start-api skips the JWT authorizer: there, and only there
// (AWS_SAM_LOCAL=true), the caller's claims come from the unverified bearer
// token. See SECURITY.md.
package samlocal

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"

	"github.com/idemkeys/idem/functions/internal/httpx"
	"github.com/idemkeys/idem/internal/httpapi"
)

// EnvVar is the variable the SAM CLI sets to "true" in the containers
// of sam local invoke and sam local start-api. Lambda never sets it, and
// template.yaml must not (a test holds it to that).
const EnvVar = "AWS_SAM_LOCAL"

// The placeholders the SAM CLI puts in every payload 2.0 event that
// sam local start-api builds (aws-sam-cli, samcli/local/events/api_event.py:
// RequestContextV2's defaults, which its event constructor never
// overrides): AWS's documentation account id and a made-up API id. No
// event API Gateway sends carries both, so the unverified path is taken
// only for an event that does: AWS_SAM_LOCAL on a deployed function is not
// enough to make it trust a token.
const (
	SAMAccountID = "123456789012"
	SAMAPIID     = "1234567890"
)

// fromSAMCLI says whether req carries the SAM CLI's placeholders.
func fromSAMCLI(req *events.APIGatewayV2HTTPRequest) bool {
	return req.RequestContext.AccountID == SAMAccountID && req.RequestContext.APIID == SAMAPIID
}

// Handler is an HTTP API function's handler, as lambda.Start takes it.
type Handler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Serve returns the handler to start for r. Under the SAM CLI
// (AWS_SAM_LOCAL=true, read once, now) it is r.Handle behind
// UnverifiedClaims; everywhere else it is r.Handle itself, and a request
// without verified claims is refused (401).
func Serve(r httpx.Routes, claim string, log *slog.Logger) Handler {
	if os.Getenv(EnvVar) != "true" {
		return r.Handle
	}
	return UnverifiedClaims(r.Handle, claim, log)
}

// UnverifiedClaims fills the claims of a request that carries none, and
// that carries the SAM CLI's placeholders (SAMAccountID and SAMAPIID), from
// its bearer token, WITHOUT checking the token's signature, issuer,
// audience or expiry, then calls h. It is for the SAM CLI only: sam local start-api does
// not run an HTTP API's JWT authorizer (it logs "Authorizer ... with type
// 'JWT' is currently not supported", aws-sam-cli #6550 and #2833) and passes
// the request on without requestContext.authorizer, which would make every
// route answer 401. Claims that an authorizer verified are never replaced;
// a request without the placeholders (an event of API Gateway's, or a
// hand-made one without them), without a token, or whose token has no
// claim, goes on as it came (and gets 401). The first request it fills is logged at WARN, once
// per process, naming the claim, never the token or the claims' values.
func UnverifiedClaims(h Handler, claim string, log *slog.Logger) Handler {
	if claim == "" {
		claim = "sub"
	}
	var once sync.Once
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if a := req.RequestContext.Authorizer; fromSAMCLI(&req) && (a == nil || a.JWT == nil || len(a.JWT.Claims) == 0) {
			if claims := bearerClaims(req.Headers); claims[claim] != "" {
				once.Do(func() {
					log.Warn("UNVERIFIED IDENTITY: "+EnvVar+"=true and the request carries no verified claims, "+
						"so the scope is taken from the bearer token's claim without verifying the token: "+
						"sam local start-api does not run the HTTP API's JWT authorizer (aws-sam-cli #6550, #2833). "+
						"Deployed, API Gateway verifies every token; never set "+EnvVar+" on a deployed function.",
						"claim", claim)
				})
				req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
					JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
				}
			}
		}
		return h(ctx, req)
	}
}

// bearerClaims decodes the payload of the Authorization header's bearer
// token, unverified, into claims as API Gateway passes them: every value a
// string. Anything that is not a readable JWT gives none.
func bearerClaims(headers map[string]string) map[string]string {
	h, _ := httpapi.HeaderValue(headers, "Authorization")
	scheme, raw, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil
	}
	parsed := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(strings.TrimSpace(raw), parsed); err != nil {
		return nil
	}
	return httpapi.ClaimStrings(parsed)
}
