package testbed

import (
	"maps"

	"github.com/aws/aws-lambda-go/events"
)

// RESTRequest is a REST API (payload 1.0, Lambda proxy) request to POST
// /orders from a caller whose token a Cognito user pool authorizer
// verified (claims sub and tenant "t-" + sub, what RESTClaim reads; no
// caller for sub "").
func RESTRequest(sub string, headers map[string]string, body string) events.APIGatewayProxyRequest {
	req := events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: "/orders", Path: "/orders", Headers: headers, Body: body}
	if sub != "" {
		req.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": sub, "tenant": "t-" + sub}}
	}
	return req
}

// IAMUserARN is the ARN of the IAM user sub, the scope IAMPrincipal reads
// from a FunctionURLRequest of sub.
func IAMUserARN(sub string) string { return "arn:aws:iam::123456789012:user/" + sub }

// FunctionURLRequest is a Lambda function URL request to POST /orders that
// the IAM user sub signed, to a URL of auth type AWS_IAM (its ARN is
// IAMUserARN(sub); unsigned for sub "").
func FunctionURLRequest(sub string, headers map[string]string, body string) events.LambdaFunctionURLRequest {
	req := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: "/orders", Headers: headers, Body: body}
	req.RequestContext.HTTP.Method = "POST"
	req.RequestContext.HTTP.Path = "/orders"
	if sub != "" {
		req.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
			IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{AccountID: "123456789012", UserARN: IAMUserARN(sub)},
		}
	}
	return req
}

// ALBRequest is an Application Load Balancer request (single-value
// headers) to POST /orders through a listener rule that authenticated sub:
// the headers given, and x-amzn-oidc-identity sub, what ALBOIDCIdentity
// reads (none for sub ""). headers is not changed.
func ALBRequest(sub string, headers map[string]string, body string) events.ALBTargetGroupRequest {
	h := maps.Clone(headers)
	if h == nil {
		h = map[string]string{}
	}
	if sub != "" {
		h["x-amzn-oidc-identity"] = sub
	}
	return events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/orders", Headers: h, Body: body}
}
