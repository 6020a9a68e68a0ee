// Package idem makes an operation take effect once per idempotency key, with
// its record in DynamoDB, for Lambda functions and any other Go service.
//
// A client sends one key per logical operation and reuses it on every retry.
// Store.Do runs the operation the first time and answers every retry with
// the response it stored:
//
//	store, err := idem.New(dynamodb.NewFromConfig(cfg), "idempotency")
//	res, err := store.Do(ctx, idem.Request{Scope: caller, Key: key, Fingerprint: fp},
//		func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
//			tx.Add(types.TransactWriteItem{Put: &types.Put{...}}, nil) // business writes
//			return idem.Response{StatusCode: 201, Body: body}, nil
//		})
//
// The front doors, which read the scope, the key and the fingerprint from
// a request and answer over HTTP, are packages of their own: idemlambda for
// Lambda's event sources (API Gateway, function URLs, ALB, SQS,
// EventBridge, typed functions), idemhttp for net/http. Package idemtest
// runs a Store on DynamoDB Local in a test.
//
// # Contract
//
// For one (scope, key) while its record lives (Options.TTL), the work's
// business writes commit at most once, with the completed record in one
// call (a TransactWriteItems; a PutItem of the record alone for a work
// with no writes), and every call that returns a Result returns that
// commit's response. A call with another fingerprint gets
// ErrFingerprintMismatch; a call while another holds a live lease gets an
// *InProgressError (or, with Options.Wait, the result once it is there).
// A work that returns an error, or a final 5xx a door refuses to store,
// commits nothing and lapses its lease: the same request's retry runs it
// again at once. A holder whose lease was taken over is fenced
// (ErrLeaseLost): none of its writes commit. A work whose process dies
// leaves its lease (Options.Lease) to run out.
//
// Every DynamoDB call may land and lose its answer; each reads its own
// write as its own, so a lost answer is never a second effect. A release
// (the lapse after a failure, or the hand-back of a claim or commit whose
// answer was lost) that DynamoDB throttles or a transaction holds up is
// sent again for at most 5 s, cut short once the request's context is
// done but after its first second: one that runs out leaves its lease to
// run out, and the call's error then says the outcome is unknown where the
// release was to settle one. A work that
// calls another system must make that call safe to repeat, since a
// takeover runs the work again: send it DownstreamKey(namespace, scope,
// key) as its idempotency key.
//
// Store.DoAtomic is the one-call path for a work whose only effects are
// its writes to the Tx: it runs the work first and puts the record
// straight as completed in that same call. The work may run more
// often than it commits, so it must not call out. Both paths share the
// record, so they may be mixed on one key.
//
// DynamoDB's limits are checked before any write, each with its own error
// (a *LimitError: ErrResponseTooLarge, ErrItemTooLarge, ErrTooManyWrites,
// ErrTransactionTooLarge), and ErrInvalidWrite for two actions on one
// item. The operator's calls (Store.Inspect, Store.Lapse, Store.Delete)
// act only on the record as it was read.
//
// # Cost
//
// A first request costs two DynamoDB calls with Do (the claim's PutItem,
// then the commit) and one with DoAtomic (the commit); the commit is a
// TransactWriteItems, or a PutItem where the work wrote nothing. A replay, a 409 and a 422 cost one on
// either path, and none from Options.Cache. Only Options.Wait and a call
// whose answer was lost read the record. A fingerprint allocates only its
// result; BENCHMARKS.md has the figures.
//
// # Traces and metrics
//
// Each Do and DoAtomic call is one OpenTelemetry span, on
// Options.TracerProvider (the global one by default): its outcome, an
// event for each step, KeyHash, never the key, the scope or a body. With
// no SDK set it costs no allocation. Package idemotel is a Metrics on
// OpenTelemetry.
//
// The protocol, why each condition is as it is, and what its model proves
// are in DESIGN.md (https://github.com/idemkeys/idem/blob/main/DESIGN.md).
package idem
