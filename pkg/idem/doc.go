// Package idem makes an operation take effect once per idempotency key, with
// its record in DynamoDB, for Lambda functions and any other Go service.
//
// A client sends one key per logical operation and reuses it on every retry.
// Store.Do runs the operation the first time and answers every retry with the
// response it stored:
//
//	store, err := idem.New(dynamodb.NewFromConfig(cfg), "idempotency")
//	res, err := store.Do(ctx, idem.Request{Scope: caller, Key: key, Fingerprint: fp},
//		func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
//			tx.Add(types.TransactWriteItem{Put: &types.Put{...}}, nil) // business writes
//			return idem.Response{StatusCode: 201, Body: body}, nil
//		})
//
// # The protocol
//
// Each (scope, key) is one item whose partition key encodes both parts
// injectively. Do claims it with one conditional PutItem that wins only
// where there is no record, or an expired one (TTL deletes late, so an
// expired item is treated as absent). A lost claim returns the record that
// won, so deciding costs no second read:
//
//   - completed, same fingerprint: the stored response is replayed (Result.Replayed);
//   - a different fingerprint, in any state: ErrFingerprintMismatch;
//   - in progress under a live lease: an *InProgressError (ErrInProgress) saying
//     when to retry, or, with Options.Wait, consistent reads until it completes;
//   - in progress under a lapsed lease, same fingerprint: a takeover, a
//     second conditional PutItem that replaces exactly the lease it saw lapse.
//
// The decision is one pure function of the record last seen, the request's
// fingerprint and the time (next, in decide.go); Do and DoAtomic are each a
// straight loop over it.
//
// The winner runs the work under a fresh random lease token, with a context
// that ends at the lease's end as written to the record, less a commit
// reserve: time spent in the claim comes out of the work's time. The lease
// is Options.Lease, cut to the time left before the caller's deadline (a
// Lambda's own deadline included). The work does not write its business
// items itself: it adds them to the Tx, and Do commits them with the
// completed record in one TransactWriteItems, conditioned on the record
// still being in progress under this lease token. Both happen or neither. A
// work with no business writes completes with one conditional PutItem.
//
// If that condition fails, Do looks at the record DynamoDB returned with the
// cancellation. Completed under this lease token means this holder's own
// commit landed and only its answer was lost (a timeout, an SDK retry of a
// transaction that had committed): the stored response is returned. Anything
// else means the lease was taken over, and Do fails with ErrLeaseLost: the
// late holder is fenced, and none of its writes happened.
//
// A business write whose own condition fails (an order id already taken) is
// handed to its ConflictFunc, whose response is stored without any business
// write, after the same limit checks as any response. A work that returns an
// error has its lease lapsed, not deleted: one update fenced on the token
// sets lease_until to 0 and keeps the fingerprint, so the key stays bound to
// its request. The same request's retry takes it over at once and runs the
// work again; another request under the key still gets ErrFingerprintMismatch.
// Deleting would let another request bind the key after a failure that may
// already have charged a card: an orphaned charge. A work whose process dies
// leaves its lease to run out.
//
// # Every call may land and lose its answer
//
// The claim, a takeover, the commit and the lapse can each reach the table
// and still come back as a timeout or a reset, and be sent again by the SDK.
// Each reads its own write as its own: a claim whose condition fails on a
// record carrying its own lease token has won; a commit whose condition fails
// on a record completed under its token landed; a lapse sent twice lapses
// twice, which is the same. A claim whose every answer was lost lapses its
// lease, so that its request's retry need not wait it out; a commit whose
// outcome is unknown is settled by the lapse, which is fenced as the commit
// is. A single-item write that meets a transaction in flight on its item
// (TransactionConflictException, which the SDK does not retry) is retried a
// few times, then answered as in progress (ErrInProgress), never as an
// internal error.
//
// # One round trip: DoAtomic
//
// Work whose only effect is its DynamoDB writes can skip the in-progress
// state: Store.DoAtomic runs the work first, then puts the record straight as
// completed, under the claim's condition, in the same TransactWriteItems as
// the business writes. A duplicate's transaction loses and reads its answer
// from the cancellation reasons: a replay, a 422, or a 409 for a live lease
// that Do left. Both paths share the record's format and conditions, so they
// may be mixed on one key. The work may run more often than it commits, which
// is why it must not call out.
//
// # Cost
//
// A first request costs two calls with Do, the claim and the commit
// transaction (or PutItem), and one with DoAtomic. A replay, a 409 and a
// 422 cost one on either path: the write that lost. No path
// reads the record except Options.Wait, an engine that does not return the
// old item, and a commit whose outcome the client did not see.
//
// # Limits
//
// DynamoDB's limits are checked before any write, on every path (a
// ConflictFunc's response included), each with its own error: a completed
// record over 400 KB (ErrResponseTooLarge), a business item over 400 KB
// (ErrItemTooLarge), more than 100 actions (ErrTooManyWrites) or 4 MB
// (ErrTransactionTooLarge) in the transaction, a write with no action or two
// actions on one item, the record's included (ErrInvalidWrite; two puts on
// one item are left to DynamoDB, whose refusal is ErrInvalidWrite too). Do's
// lease is then lapsed.
//
// # Side effects outside DynamoDB
//
// A work that calls another system must make that call safe to repeat, since a
// takeover after a crash runs the work again: send the other system
// DownstreamKey(namespace, scope, key) as its idempotency key.
//
// # Front doors
//
// Each front door is a thin adapter over Do: it reads the scope from the
// verified identity (never from a value the client sets), the key from the
// Idempotency-Key header in any case and in the IETF draft's quoted form,
// refuses bad input before anything is written (401 without an identity,
// 400 for a missing, invalid or repeated key, 413 over the body limit), runs
// the caller's Parse once, fingerprints the method, the matched route, the
// raw query and the body, and answers with the stored response, marked
// "Idempotent-Replayed: true" on a replay. A concurrent duplicate gets 409
// with Retry-After, a reused key 422, a TransientError the status it names
// with Retry-After and the key lapsed. Every error is problem details
// (RFC 9457, application/problem+json) with a stable code (package httpapi).
// The handler gets a Req: the event, the parsed body, the scope and the key.
//
//   - HTTPTyped and Store.HTTP: API Gateway HTTP API (payload 2.0); scope
//     from a JWT claim (HTTPOptions.ScopeClaim) or HTTPOptions.Scope.
//   - FunctionURL: Lambda function URLs; scope from the AWS_IAM principal,
//     or DoorOptions.Scope for auth type NONE.
//   - RESTAPI: API Gateway REST API (payload 1.0); scope from a Cognito
//     claim (RESTClaim) or a Lambda authorizer's context (RESTAuthorizer).
//   - ALB: Application Load Balancer targets, multi-value headers included;
//     DoorOptions.Scope is required (ALBOIDCIdentity behind an auth rule).
//   - Store.Middleware: net/http, func(http.Handler) http.Handler; the
//     handler finds its Tx with TxFrom, and its response is captured,
//     committed and replayed; on a ServeMux pattern the fingerprint takes
//     r.Pattern and its path values.
//   - Function: any typed handler func(ctx, In) (Out, error), keyed by a
//     function of the event; Out is stored as JSON and decoded on a replay.
//
// # A cache of completed responses
//
// Options.Cache (off by default) keeps completed responses in the execution
// environment, bounded in entries and bytes and never past the record's
// expires_at. A replay found there costs no DynamoDB call; another request
// under a cached key is still refused (ErrFingerprintMismatch). In-progress
// records are never cached.
//
// # Queue consumers
//
// Store.SQS wraps an SQS-triggered handler the same way: the scope names the
// consumer, the key is the event id (the messageId, a producer's id from a
// message attribute, or one derived from the body), and the message's writes
// commit with its processed marker. A duplicate delivery is skipped, and only
// the messages that failed are reported back as batch item failures.
// Store.EventBridge does the same for EventBridge events, keyed by their id.
//
// # Keys and scopes
//
// The scope must come from the authenticated caller, never from anything the
// client chose, so that two tenants' keys never meet. Keys are 1 to 255
// printable ASCII characters (ValidateKey); ParseKeyHeader also accepts the
// IETF draft's quoted form of the Idempotency-Key header. Fingerprint hashes
// the method, the route and the body, JSON in canonical form.
package idem
