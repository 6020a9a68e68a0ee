// Package faultproxy stands between a DynamoDB client and a local engine
// on loopback and injects faults into chosen operations: throttling, server
// errors, latency, a connection reset before the request reaches the engine,
// a request that reaches it (and commits) whose answer is then dropped or
// held, and the conflict a single-item write meets beside a transaction in
// flight. A fault may be limited to one operation's calls (Fault.Match).
//
// It is HTTP-aware because the faults that matter are per operation (only
// TransactWriteItems, say) and some happen after the engine acted, which a
// TCP-level proxy such as toxiproxy cannot express. Where idemtest.Faults
// acts on a Store's calls after the SDK's retries, the proxy acts on each
// attempt on the wire, under the client's own retryer and timeouts: what
// a test of an SDK configuration needs.
//
//	engine, _ := idemtest.Endpoint()
//	p, _ := faultproxy.New(engine)
//	srv := httptest.NewServer(p)
//	db := idemtest.Client(t, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(srv.URL) })
//	p.Inject(faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.CommitThenDrop})
package faultproxy

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Kind is what a fault does.
type Kind int

const (
	// Throttle answers DynamoDB's ThrottlingException (400): the SDK retries.
	Throttle Kind = iota
	// ServerError answers InternalServerError (500): the SDK retries.
	ServerError
	// Latency holds the request for Delay, then forwards it.
	Latency
	// ResetBefore closes the connection without forwarding: nothing happened.
	ResetBefore
	// CommitThenDrop forwards the request, lets the engine act on it, then
	// closes the connection instead of answering: it happened, and the
	// client does not know.
	CommitThenDrop
	// LandLate closes the connection at once, as a lost answer does, and
	// forwards the request to the engine only after Delay: a call in
	// flight that lands after its client has given up on it.
	LandLate
	// TransactionConflict answers TransactionConflictException (400), as
	// DynamoDB does to a single-item write that meets a transaction in
	// flight on its item. The SDK does not retry it.
	TransactionConflict
	// HoldAfter forwards the request, lets the engine act on it, then
	// holds its answer for Delay before giving it: a caller that dies in
	// that time dies after its write landed.
	HoldAfter
)

// Fault applies to the next Times calls of Op ("TransactWriteItems"; ""
// for any operation), after the first Skip of them have passed untouched.
// With Match set, only calls whose request body holds Match count: one
// operation's calls (its idempotency key is in every call on its record).
// Reached, when set, is called each time the fault acts, once it has: after
// the engine acted for CommitThenDrop and HoldAfter, as the hold begins for
// Latency, as it answers or hangs up for the others.
type Fault struct {
	Op      string
	Kind    Kind
	Times   int
	Skip    int
	Delay   time.Duration
	Match   string
	Reached func()
}

// Proxy is an http.Handler forwarding to the engine.
type Proxy struct {
	target *httputil.ReverseProxy

	mu       sync.Mutex
	faults   []Fault
	injected map[Kind]int
	late     sync.WaitGroup // LandLate requests not yet landed
}

// Landed waits until every LandLate request has reached the engine.
func (p *Proxy) Landed() { p.late.Wait() }

// New returns a proxy to the engine at endpoint.
func New(endpoint string) (*Proxy, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	// A request whose caller hung up (killed, or gone after a lost
	// answer) fails on its way; that is the point, not news for the log.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	return &Proxy{target: rp, injected: map[Kind]int{}}, nil
}

// Inject queues a fault.
func (p *Proxy) Inject(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
}

// Injected is how many faults of kind were injected so far.
func (p *Proxy) Injected(kind Kind) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.injected[kind]
}

// Clear drops the faults not yet injected: the network heals.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
}

func (p *Proxy) take(op string, body []byte) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range p.faults {
		if f.Op != "" && f.Op != op || f.Match != "" && !bytes.Contains(body, []byte(f.Match)) {
			continue
		}
		if f.Skip > 0 {
			p.faults[i].Skip--
			return Fault{}, false
		}
		if f.Times--; f.Times == 0 {
			p.faults = append(p.faults[:i], p.faults[i+1:]...)
		} else {
			p.faults[i] = f
		}
		p.injected[f.Kind]++
		return f, true
	}
	return Fault{}, false
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		hangUp(w)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	f, ok := p.take(op, body)
	if !ok {
		p.target.ServeHTTP(w, r)
		return
	}
	switch f.Kind {
	case CommitThenDrop, HoldAfter:
		p.afterTheEngine(w, r, f)
	default:
		f.reached()
		p.beforeTheEngine(w, r, f, body)
	}
}

func (f Fault) reached() {
	if f.Reached != nil {
		f.Reached()
	}
}

// beforeTheEngine injects a fault that acts before the engine sees the
// request, or instead of it.
func (p *Proxy) beforeTheEngine(w http.ResponseWriter, r *http.Request, f Fault, body []byte) {
	switch f.Kind {
	case Throttle:
		dynamoError(w, http.StatusBadRequest, "ThrottlingException", "Rate of requests exceeds the allowed throughput.")
	case ServerError:
		dynamoError(w, http.StatusInternalServerError, "InternalServerError", "Internal server error")
	case Latency:
		time.Sleep(f.Delay)
		p.target.ServeHTTP(w, r)
	case ResetBefore:
		hangUp(w)
	case LandLate:
		late := r.Clone(context.WithoutCancel(r.Context()))
		p.late.Add(1)
		go func() {
			defer p.late.Done()
			time.Sleep(f.Delay)
			late.Body = io.NopCloser(bytes.NewReader(body))
			p.target.ServeHTTP(&discard{header: http.Header{}}, late)
		}()
		hangUp(w)
	case TransactionConflict:
		dynamoError(w, http.StatusBadRequest, "TransactionConflictException", "Transaction is ongoing for the item")
	}
}

// afterTheEngine lets the engine act on the request, then drops its answer
// (CommitThenDrop) or holds it for f.Delay (HoldAfter).
func (p *Proxy) afterTheEngine(w http.ResponseWriter, r *http.Request, f Fault) {
	rec := &discard{header: http.Header{}}
	p.target.ServeHTTP(rec, r) // the engine acts; its answer goes nowhere, or waits
	f.reached()
	if f.Kind == CommitThenDrop {
		hangUp(w)
		return
	}
	time.Sleep(f.Delay)
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes()) // a failed write is the client gone: there is no one left to tell
}

func dynamoError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#`+typ+`","message":"`+msg+`"}`) // a failed write is the client gone: there is no one left to tell
}

func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close() // the hang-up is the fault: how the close went changes nothing
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// discard is a ResponseWriter that keeps nothing.
type discard struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (d *discard) Header() http.Header { return d.header }
func (d *discard) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return d.body.Write(b)
}
func (d *discard) WriteHeader(status int) {
	if d.status == 0 {
		d.status = status
	}
}
