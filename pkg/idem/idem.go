package idem

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/trace"
)

// DynamoDBAPI is the part of *dynamodb.Client that a Store calls. Tests wrap
// it to count or fault calls.
type DynamoDBAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Limits on Options.TTL: the window in which clients may retry.
const (
	MinTTL = 24 * time.Hour
	MaxTTL = 7 * 24 * time.Hour
)

// Options configure a Store. The zero value of each field means its default.
type Options struct {
	// Lease is the longest a holder may keep a key before a retry may take
	// over (default 30s). It is shortened to the time left before the
	// context's deadline, the Lambda's own deadline included. It may be at
	// most half the TTL: the protocol rests on a record outliving every
	// holder of it, and a holder whose work ignores its context runs past
	// its lease; were the record to expire under it, another request could
	// claim the key afresh and the slow holder's outside effect would land
	// in the key's next life (see DESIGN.md, "What the model proves").
	Lease time.Duration
	// CommitReserve is kept back from the lease for the commit: the work's
	// context ends this long before the lease (default 1s, at most a quarter
	// of the lease).
	CommitReserve time.Duration
	// TTL is how long a record is kept, from MinTTL to MaxTTL (default 24h).
	TTL time.Duration
	// Wait, when positive, makes a request that finds the key in progress
	// poll with consistent reads for up to this long and replay the result,
	// instead of failing at once with ErrInProgress.
	Wait time.Duration
	// PollInterval is the pause between polls while waiting (default 100ms).
	PollInterval time.Duration
	// Clock gives the time written to and compared with records (default
	// time.Now). Tests move it to expire leases and records without sleeping.
	Clock func() time.Time
	// Logger receives one line per outcome (default: none). It never gets
	// the key, the body or the response; only the scope and KeyHash (and
	// the trace_id of a call whose span records).
	Logger *slog.Logger
	// Metrics receives each call's outcome and the lease time its work
	// used (default: none). See Outcome.
	Metrics Metrics
	// TracerProvider makes each Do and DoAtomic call one span, with its
	// outcome and an event for each step (default: otel.GetTracerProvider(),
	// looked up per call). While it records nothing (no SDK set, or a
	// no-op provider) a call starts no span and allocates nothing for one.
	// A span never carries the key, the scope, the body, a header or the
	// response: KeyHash names the key. DESIGN.md, "Observability", lists
	// what it does carry.
	TracerProvider trace.TracerProvider
	// Cache, when both its bounds are set, keeps completed responses in the
	// execution environment (off by default): a replay found there costs no
	// DynamoDB call, and the fingerprint is still checked (a 422 from the
	// cache). Only completed records are kept, never past their expires_at.
	// Each Lambda execution environment has its own, which Store.Delete in
	// another does not reach: a deleted key is replayed from it until the
	// record's expires_at or the environment's end.
	Cache CacheOptions
}

// Store runs operations exactly once per (scope, key) against one DynamoDB
// table. It is safe for concurrent use.
type Store struct {
	db      DynamoDBAPI
	table   string
	opts    Options
	cache   *responseCache // nil: off
	tracing *tracing
	perCall CallObserver // opts.Metrics, if it observes whole calls
}

// tableName is DynamoDB's rule, which emulators do not all enforce.
var tableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// New returns a Store on table, whose hash key must be the string attribute
// AttrPK, with TTL on AttrExpiresAt (on-demand capacity, no sort key). It
// makes no call.
func New(db DynamoDBAPI, table string, optFns ...func(*Options)) (*Store, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil DynamoDB client", ErrInvalidOptions)
	}
	if !tableName.MatchString(table) {
		return nil, fmt.Errorf("%w: table name %q: DynamoDB needs 3 to 255 of a-z, A-Z, 0-9, '_', '-', '.'", ErrInvalidOptions, table)
	}
	o := Options{}
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Lease == 0 {
		o.Lease = 30 * time.Second
	}
	if o.CommitReserve == 0 {
		o.CommitReserve = time.Second
	}
	o.CommitReserve = min(o.CommitReserve, o.Lease/4)
	if o.TTL == 0 {
		o.TTL = MinTTL
	}
	if o.PollInterval == 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.Lease < 0 || o.CommitReserve < 0 || o.Wait < 0 || o.PollInterval < 0:
		return nil, fmt.Errorf("%w: negative duration", ErrInvalidOptions)
	case o.TTL < MinTTL || o.TTL > MaxTTL:
		return nil, fmt.Errorf("%w: TTL %v outside %v to %v", ErrInvalidOptions, o.TTL, MinTTL, MaxTTL)
	case o.Lease > o.TTL/2:
		// A record must outlive any holder of it, a slow one included: half
		// the TTL at least is left past any lease (the model's assumption).
		return nil, fmt.Errorf("%w: lease %v is longer than half the TTL %v", ErrInvalidOptions, o.Lease, o.TTL)
	}
	s := &Store{table: table, opts: o, cache: newResponseCache(o.Cache), tracing: newTracing(o.TracerProvider)}
	s.db = guarded{api: db, table: table, s: s}
	s.perCall, _ = o.Metrics.(CallObserver)
	return s, nil
}

// Request identifies one logical operation.
type Request struct {
	// Scope is whose key it is: the authenticated caller, never a value the
	// client chose. Keys in different scopes never meet. It must be valid
	// UTF-8, at most MaxScopeLength bytes (else ErrInvalidScope).
	Scope string
	// Key is the client's idempotency key (see ValidateKey).
	Key string
	// Fingerprint says what the request was (see Fingerprint); the same key
	// with another fingerprint is refused with ErrFingerprintMismatch. It
	// must be valid UTF-8 and not empty (else ErrInvalidBody).
	Fingerprint string
}

// Response is what an operation answered, stored and replayed byte for
// byte but for its cookies, which only the first answer carries.
type Response struct {
	StatusCode int
	// Header is the headers to send. A Set-Cookie header (in any case) is,
	// like Cookies, sent with the first answer only.
	Header map[string]string
	// Cookies are Set-Cookie values, in order (API Gateway's payload 2.0
	// carries them apart from the headers), sent with the first answer
	// only: the record and the cache never keep them, and no replay sends
	// them, since a session cookie sent again for the record's life would
	// outlive the session's rotation or revocation.
	Cookies []string
	Body    []byte
}

// Result is the outcome of Do.
type Result struct {
	Response Response
	// Replayed is true when the response is a stored one, from an earlier
	// execution, and the work did not run now.
	Replayed bool
}

// Work is an operation to run once. It adds its business writes to tx rather
// than writing them itself, so that they commit with the response or not at
// all. Returning a Response of any status stores it; returning an error
// lapses the lease, so that a retry of the same request runs the work again.
type Work func(ctx context.Context, tx *Tx) (Response, error)

// Do runs work once for req. A first call runs it and stores its response; a
// repeat replays the stored response; a concurrent repeat fails with
// ErrInProgress (or, with Options.Wait, waits for the result); a repeat with a
// different fingerprint fails with ErrFingerprintMismatch. If work fails, its
// error is returned and the lease lapsed: the key stays bound to req, whose
// retry takes it over at once. If the lease was taken over while work ran,
// nothing is committed and Do fails with ErrLeaseLost. A call contends for
// the key (a claim, a takeover) at most four times: one that loses each
// time, however busy the key, fails with ErrInProgress. It sends the claim,
// a PutItem, then the commit: one TransactWriteItems with the writes, or a
// PutItem of the record alone when work wrote none.
func (s *Store) Do(ctx context.Context, req Request, work Work) (res Result, err error) {
	c, err := s.newCall(ctx, req, pathDo)
	if err != nil {
		return Result{}, err
	}
	ctx = c.start(ctx)
	defer c.end(&res, &err)
	if res, hit, err := c.cached(); hit {
		return res, err
	}
	var seen *record
	for {
		switch st := next(seen, req.Fingerprint, s.opts.Clock()); st {
		case stepClaim, stepTakeover:
			if err := c.contend(seen); err != nil {
				return Result{}, err
			}
			l, lost, err := s.claim(ctx, c, seen)
			if err != nil {
				return c.claimFailed(err)
			}
			if l != nil {
				return s.run(ctx, c, l, work)
			}
			seen = lost
		case stepBusy:
			if seen, err = c.wait(ctx, seen); err != nil {
				return Result{}, err
			}
		default:
			return c.answer(st, seen)
		}
	}
}

func validateRequest(req Request) error {
	if err := validateScope(req.Scope); err != nil {
		return err
	}
	if err := ValidateKey(req.Key); err != nil {
		return err
	}
	if req.Fingerprint == "" {
		return fmt.Errorf("%w: empty fingerprint", ErrInvalidBody)
	}
	if !utf8.ValidString(req.Fingerprint) {
		// The record keeps the fingerprint as a string, which the SDK
		// writes with each invalid byte as U+FFFD: read back, it would
		// never match the request's, and the key's retry would get 422.
		return fmt.Errorf("%w: fingerprint not valid UTF-8 (hex-encode a raw digest)", ErrInvalidBody)
	}
	return nil
}

// logger is the per-request logger, built only if something will log.
func (s *Store) logger(ctx context.Context, req Request, path string) *slog.Logger {
	if !s.opts.Logger.Enabled(ctx, slog.LevelWarn) {
		return s.opts.Logger
	}
	return s.opts.Logger.With("scope", req.Scope, "key_hash", KeyHash(req.Scope, req.Key), "path", path)
}
