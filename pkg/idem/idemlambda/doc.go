// Package idemlambda is pkg/idem's front doors for Lambda's event sources:
// a file per source, each a function that takes an *idem.Store (any Doer)
// and a handler and returns what lambda.Start takes.
//
// The HTTP doors (HTTPAPI, RESTAPI, FunctionURL, ALB) share one shape: a
// Parse for the body, a Handler that gets a Request (the event, the parsed
// body, the scope and the key) and a Tx and returns an idem.Response, and
// one Options. The scope is a function of the event that reads the
// verified identity, never a value the client sets: each door defaults to
// its own (JWTClaim, RESTClaim, IAMPrincipal), ALB has none
// (ALBOIDCIdentity behind an authenticate rule).
//
//	lambda.Start(idemlambda.HTTPAPI(store, parseOrder,
//		func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, Order], tx *idem.Tx) (idem.Response, error) {
//			tx.Add(orderPut(req.Body), nil)
//			return idem.Response{StatusCode: 201, Body: created}, nil
//		}))
//
// A request passes the checks that write nothing first: 401 without a
// verified identity, 413 over the body limit, 400 for a missing, invalid
// or repeated Idempotency-Key (bare, or quoted as the IETF draft has it),
// Parse's own refusal. The first request then runs the handler and stores
// its response with its writes; a retry gets the stored response, marked
// "Idempotent-Replayed: true"; a concurrent duplicate 409 with
// Retry-After; the key with another request 422; a TransientError its
// status with Retry-After. Every error is RFC 9457 problem details
// (application/problem+json) with a stable code. A final 5xx the handler
// returns is sent as it is and not stored: its retry runs the handler
// again.
//
// The consumers (SQS, EventBridge, Kinesis, DynamoDBStream) share another:
// an EventHandler that gets an Event (the event, the consumer's scope, the
// event's id) and a Tx, and ConsumerOptions, which Function takes too. A
// duplicate delivery is skipped; a failed or panicking event fails alone
// and is delivered again (on a stream, with the later records of its key,
// which keeps each key's order). An event whose id another delivery holds fails too, never
// acknowledged, as the holder may still fail; one whose id was processed
// with another body fails on every delivery, logged, until the dead-letter
// queue takes it (SQS and EventBridge say how).
//
// Every door checks its options when it is built and panics on one out of
// range (a negative MaxBodyBytes) or missing (a consumer's Scope,
// Function's Key), with an error that matches idem.ErrInvalidOptions: a
// misconfigured function fails at its init, with the cause in its log. An
// HTTP door without a scope builds, and answers every request 401.
package idemlambda
