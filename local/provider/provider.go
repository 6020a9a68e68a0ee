// Package provider simulates the part of a Stripe-compatible payment API
// that functions/charge uses, following what Stripe documents for it:
// creating, reading, listing and searching PaymentIntents, reading customers and
// payment methods, with Stripe's Idempotency-Key semantics, the confirmation
// rules of the API version stripe-go v82 pins, the statuses that are not
// final, the decline codes, and faults on request.
//
// Idempotency, as Stripe documents it for API v1:
//   - the status code and body of the first request under a key are saved
//     once the endpoint's execution begins, whatever they are, 500 errors
//     included, and every later request with the key and the same parameters
//     gets them back, marked Idempotent-Replayed: true and Original-Request;
//   - a request that fails validation, or that arrives while the first is
//     still executing (409), saves nothing;
//   - the same key with other parameters is an idempotency_error (400);
//   - keys are kept at least 24 hours (KeyRetention); a key reused after it
//     was pruned is a new request.
//
// Lists and search, as Stripe documents them: the list API is consistent at
// once, search lags (up to SearchWorstLag, Stripe's outage worst case) and
// may be switched off; both page, ten at a time by default. Metadata is held
// to Stripe's limits (MaxMetadataKeys and the rest).
//
// Where Stripe's docs are silent, the simulator chooses, and says so where
// it applies: search answers an account without it 400 invalid_request_error
// (SetSearchAvailable); results of one second are ordered by creation (list,
// search); a list given both starting_after and ending_before is refused;
// metadata counts Unicode code points and refuses an empty key; a failed
// asynchronous payment is a generic decline (Resolve).
//
// Every real effect, a payment intent created, is counted, so tests can
// assert "one charge".
package provider

import (
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// KeyRetention is how long the simulator keeps an idempotency key: Stripe's
// documented minimum ("at least 24 hours old" before pruning).
const KeyRetention = 24 * time.Hour

// APIVersionAutomaticPaymentMethods is the API version from which a
// PaymentIntent accepts the Dashboard's payment methods by default, so that
// confirming it needs a return_url unless redirects are refused.
const APIVersionAutomaticPaymentMethods = "2023-08-16"

// FaultKind is what an injected fault does to a create request.
type FaultKind string

const (
	// Delay holds the request for Fault.Delay, then serves it.
	Delay FaultKind = "delay"
	// FailBeforeEffect answers Fault.Status (default 500) with an api_error
	// once execution began and before any effect. As at Stripe, the answer
	// is saved under the key and replayed to every retry with it.
	FailBeforeEffect FaultKind = "fail_before_effect"
	// FailAfterEffect creates the payment intent, then answers and saves
	// Fault.Status (default 500): an outcome the caller cannot know.
	FailAfterEffect FaultKind = "fail_after_effect"
	// DropAfterEffect creates the payment intent and stores its result, then
	// closes the connection without answering: the client sees a timeout for
	// a request that took effect.
	DropAfterEffect FaultKind = "drop_after_effect"
	// HangAfterEffect creates the payment intent and stores its result, then
	// holds the answer for Fault.Delay: time in which to kill the caller.
	HangAfterEffect FaultKind = "hang_after_effect"
	// KeyInUse answers 409 as Stripe does while another request with the
	// key executes; nothing is saved.
	KeyInUse FaultKind = "key_in_use"
	// NotJSON answers Fault.Status (default 403) with an HTML page, as a
	// proxy in front of the provider would; the provider never saw it.
	NotJSON FaultKind = "not_json"
)

var faultKinds = map[FaultKind]bool{Delay: true, FailBeforeEffect: true, FailAfterEffect: true, DropAfterEffect: true, HangAfterEffect: true, KeyInUse: true, NotJSON: true}

// Fault applies to the next Times create requests (at least one); with
// Match set, only to those whose description is Match (one operation's).
// Reached, when set, is called each time the fault acts, as it does: for
// Delay as the hold begins, for HangAfterEffect once the effect is made and
// the hold begins, for the others as the answer is chosen.
type Fault struct {
	Kind    FaultKind     `json:"kind"`
	Delay   time.Duration `json:"delay,omitempty"`
	Status  int           `json:"status,omitempty"`
	Times   int           `json:"times,omitempty"`
	Match   string        `json:"match,omitempty"`
	Reached func()        `json:"-"`
}

// Effect is one payment intent created: a real charge attempt.
type Effect struct {
	Seq             int    `json:"seq"`
	PaymentIntentID string `json:"payment_intent"`
	IdempotencyKey  string `json:"idempotency_key"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	Status          string `json:"status"`
	Customer        string `json:"customer,omitempty"`
	PaymentMethod   string `json:"payment_method,omitempty"`
	Description     string `json:"description,omitempty"`
}

// Simulator is an http.Handler serving the API. Create one with New.
type Simulator struct {
	secret string
	log    *slog.Logger

	mu        sync.Mutex
	now       func() time.Time
	searchLag time.Duration
	searchOff bool
	seq       int           // of the last payment intent created
	retention time.Duration // of idempotency keys: KeyRetention unless set
	pending   int           // create requests being served now
	intents   map[string]*PaymentIntent
	customers map[string]*Customer
	methods   map[string]*PaymentMethod // saved (attached) payment methods
	keys      map[string]*stored
	faults    []Fault
	effects   []Effect
}

// New returns a simulator that accepts the secret key as a bearer token.
func New(secret string, log *slog.Logger) *Simulator {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Simulator{secret: secret, log: log, now: time.Now, retention: KeyRetention}
	s.Reset()
	return s
}

// SetClock makes the simulator read the time from now: key retention,
// creation times and search indexing follow it.
func (s *Simulator) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// SetSearchLag delays when a new payment intent can be found by search, as
// Stripe's search index does ("under normal operating conditions, data is
// searchable in less than a minute", up to SearchWorstLag in an outage).
// Lists are never behind.
func (s *Simulator) SetSearchLag(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.searchLag = d
}

// SetKeyRetention keeps idempotency keys for d instead of KeyRetention:
// Stripe keeps them "at least" 24 hours, so longer is within its word.
func (s *Simulator) SetKeyRetention(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retention = d
}

// Inject queues a fault for the next create requests.
func (s *Simulator) Inject(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// Effects returns the payment intents created so far, in order.
func (s *Simulator) Effects() []Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Effect(nil), s.effects...)
}

// Pending is the number of create requests being served now (a delayed one
// included).
func (s *Simulator) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending
}

// ClearFaults drops the faults not yet injected: the network heals.
func (s *Simulator) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Reset forgets every intent, customer, saved payment method, key, fault
// and effect.
func (s *Simulator) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intents, s.customers, s.methods, s.keys = map[string]*PaymentIntent{}, map[string]*Customer{}, map[string]*PaymentMethod{}, map[string]*stored{}
	s.faults, s.effects = nil, nil
}

func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sim/") {
		s.serveControl(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.secret {
		writeJSON(w, http.StatusUnauthorized, apiError("invalid_request_error", "", "Invalid API Key provided."))
		return
	}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && path == "/v1/payment_intents":
		s.create(w, r)
	case r.Method == http.MethodGet && path == "/v1/payment_intents":
		s.list(w, r)
	case r.Method == http.MethodGet && path == "/v1/payment_intents/search":
		s.search(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/payment_intents/"):
		s.retrieve(w, "payment_intent", strings.TrimPrefix(path, "/v1/payment_intents/"))
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/customers/"):
		s.retrieve(w, "customer", strings.TrimPrefix(path, "/v1/customers/"))
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/payment_methods/"):
		s.retrieve(w, "payment_method", strings.TrimPrefix(path, "/v1/payment_methods/"))
	default:
		writeJSON(w, http.StatusNotFound, apiError("invalid_request_error", "", "Unrecognized request URL ("+r.Method+": "+path+")."))
	}
}

// serveControl is the simulator's own API, for tests and the local stack.
func (s *Simulator) serveControl(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/_sim/faults":
		var f Fault
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil || !faultKinds[f.Kind] {
			http.Error(w, `{"error":"want {\"kind\":\"delay|fail_before_effect|fail_after_effect|drop_after_effect|hang_after_effect|key_in_use|not_json\",...}"}`, http.StatusBadRequest)
			return
		}
		s.Inject(f)
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && r.URL.Path == "/_sim/effects":
		writeJSON(w, http.StatusOK, s.Effects())
	case r.Method == http.MethodPost && r.URL.Path == "/_sim/reset":
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// nextFault takes the first fault that applies to a create with this
// description.
func (s *Simulator) nextFault(description string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Match != "" && f.Match != description {
			continue
		}
		if f.Times--; f.Times == 0 {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		} else {
			s.faults[i] = f
		}
		return f, true
	}
	return Fault{}, false
}

func (f Fault) reached() {
	if f.Reached != nil {
		f.Reached()
	}
}

type apiErr = map[string]map[string]any

func apiError(typ, code, msg string) apiErr {
	e := map[string]any{"type": typ, "message": msg}
	if code != "" {
		e["code"] = code
	}
	return apiErr{"error": e}
}

func marshal(status int, v any) (int, []byte) {
	b, _ := json.Marshal(v)
	return status, b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	_, b := marshal(status, v)
	writeRaw(w, status, b, "")
}

// writeRaw answers body with a request id of its own, or requestID.
func writeRaw(w http.ResponseWriter, status int, body []byte, requestID string) {
	if requestID == "" {
		requestID = "req_" + randomID()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", requestID)
	w.WriteHeader(status)
	_, _ = w.Write(body) //nolint:gosec // G705: the simulator's JSON, served as application/json; a failed write is the client gone, with no one left to tell
}

func randomID() string { return strings.ToLower(rand.Text()[:24]) }
