// Package provider simulates the part of a Stripe-compatible payment API
// that functions/charge uses: creating and reading PaymentIntents, with the
// provider's own Idempotency-Key semantics, and faults on request.
//
// Its Idempotency-Key handling follows the real provider: the same key with
// the same parameters replays the first result (a decline included); the same
// key with other parameters is an idempotency_error; a key whose first
// request is still executing gets 409. Every real effect, a payment intent
// created, is logged and counted, so tests can assert "one charge".
package provider

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Test payment methods, as the real provider's test mode names them.
const (
	CardVisa              = "pm_card_visa"
	CardDeclined          = "pm_card_chargeDeclined"
	CardInsufficientFunds = "pm_card_chargeDeclinedInsufficientFunds"
)

// FaultKind is what an injected fault does to a create request.
type FaultKind string

const (
	// Delay holds the request for Fault.Delay, then serves it.
	Delay FaultKind = "delay"
	// FailBeforeEffect answers Fault.Status (default 500) and does nothing.
	FailBeforeEffect FaultKind = "fail_before_effect"
	// DropAfterEffect creates the payment intent and stores its result, then
	// closes the connection without answering: the client sees a timeout for
	// a request that took effect.
	DropAfterEffect FaultKind = "drop_after_effect"
	// HangAfterEffect creates the payment intent and stores its result, then
	// holds the answer for Fault.Delay: time in which to kill the caller.
	HangAfterEffect FaultKind = "hang_after_effect"
)

// Fault applies to the next Times create requests (at least one).
type Fault struct {
	Kind   FaultKind     `json:"kind"`
	Delay  time.Duration `json:"delay,omitempty"`
	Status int           `json:"status,omitempty"`
	Times  int           `json:"times,omitempty"`
}

// Effect is one payment intent created: a real charge attempt.
type Effect struct {
	Seq             int    `json:"seq"`
	PaymentIntentID string `json:"payment_intent"`
	IdempotencyKey  string `json:"idempotency_key"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	Status          string `json:"status"`
}

// PaymentIntent is the subset of the provider's object that is served.
type PaymentIntent struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Amount        int64             `json:"amount"`
	Currency      string            `json:"currency"`
	Status        string            `json:"status"`
	Customer      string            `json:"customer,omitempty"`
	PaymentMethod string            `json:"payment_method,omitempty"`
	Description   string            `json:"description,omitempty"`
	Metadata      map[string]string `json:"metadata"`
	Created       int64             `json:"created"`
	LatestCharge  string            `json:"latest_charge,omitempty"`
}

type stored struct {
	paramsHash string
	done       chan struct{} // closed once status and body are set
	status     int
	body       []byte
}

// Simulator is an http.Handler serving the API. Create one with New.
type Simulator struct {
	secret string
	log    *slog.Logger

	mu      sync.Mutex
	pending int // create requests being served now
	intents map[string]*PaymentIntent
	keys    map[string]*stored
	faults  []Fault
	effects []Effect
}

// New returns a simulator that accepts the secret key as a bearer token.
func New(secret string, log *slog.Logger) *Simulator {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Simulator{secret: secret, log: log, intents: map[string]*PaymentIntent{}, keys: map[string]*stored{}}
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

// Reset forgets every intent, key, fault and effect.
func (s *Simulator) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intents, s.keys, s.faults, s.effects = map[string]*PaymentIntent{}, map[string]*stored{}, nil, nil
}

func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/_sim/faults":
		var f Fault
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil || (f.Kind != Delay && f.Kind != FailBeforeEffect && f.Kind != DropAfterEffect && f.Kind != HangAfterEffect) {
			http.Error(w, `{"error":"want {\"kind\":\"delay|fail_before_effect|drop_after_effect|hang_after_effect\",...}"}`, http.StatusBadRequest)
			return
		}
		s.Inject(f)
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && r.URL.Path == "/_sim/effects":
		writeJSON(w, http.StatusOK, s.Effects())
	case r.Method == http.MethodPost && r.URL.Path == "/_sim/reset":
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	case !s.authorized(r):
		writeJSON(w, http.StatusUnauthorized, apiError("invalid_request_error", "", "Invalid API Key provided."))
	case r.Method == http.MethodPost && r.URL.Path == "/v1/payment_intents":
		s.create(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/payment_intents/"):
		s.mu.Lock()
		pi, ok := s.intents[strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/")]
		s.mu.Unlock()
		if !ok {
			writeJSON(w, http.StatusNotFound, apiError("invalid_request_error", "resource_missing", "No such payment_intent"))
			return
		}
		writeJSON(w, http.StatusOK, pi)
	default:
		writeJSON(w, http.StatusNotFound, apiError("invalid_request_error", "", "Unrecognized request URL"))
	}
}

func (s *Simulator) authorized(r *http.Request) bool {
	return r.Header.Get("Authorization") == "Bearer "+s.secret
}

func (s *Simulator) nextFault() (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) == 0 {
		return Fault{}, false
	}
	f := s.faults[0]
	if f.Times--; f.Times == 0 {
		s.faults = s.faults[1:]
	} else {
		s.faults[0] = f
	}
	return f, true
}

func (s *Simulator) create(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.pending++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.pending--
		s.mu.Unlock()
	}()
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError("invalid_request_error", "", "Invalid form body"))
		return
	}
	fault, faulted := s.nextFault()
	if faulted && fault.Kind == Delay {
		select {
		case <-time.After(fault.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if faulted && fault.Kind == FailBeforeEffect {
		status := fault.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		writeJSON(w, status, apiError("api_error", "", "simulated failure before any effect"))
		return
	}

	key := r.Header.Get("Idempotency-Key")
	hash := paramsHash(r.PostForm)
	entry, replay, conflict := s.reserve(key, hash)
	switch {
	case conflict != "":
		writeJSON(w, http.StatusBadRequest, apiError("idempotency_error", "", conflict))
		return
	case replay && entry == nil:
		w.Header().Set("Stripe-Should-Retry", "true")
		writeJSON(w, http.StatusConflict, apiError("invalid_request_error", "idempotency_key_in_use", "There is currently another in-progress request using this Idempotent Key."))
		return
	case replay:
		w.Header().Set("Idempotent-Replayed", "true")
		writeRaw(w, entry.status, entry.body)
		return
	}

	status, body := s.charge(r.PostForm, key)
	if entry != nil {
		entry.status, entry.body = status, body
		close(entry.done)
		if status == http.StatusBadRequest {
			// As the real provider: a request that failed validation saves
			// no result, so a corrected one may reuse the key.
			s.mu.Lock()
			delete(s.keys, key)
			s.mu.Unlock()
		}
	}
	if faulted && fault.Kind == HangAfterEffect {
		select {
		case <-time.After(fault.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if faulted && fault.Kind == DropAfterEffect {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
	}
	writeRaw(w, status, body)
}

// reserve claims key for a first request, or finds what to replay. A
// replay with a nil entry means the first request is still executing.
func (s *Simulator) reserve(key, hash string) (entry *stored, replay bool, conflict string) {
	if key == "" {
		return nil, false, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.keys[key]; ok {
		if e.paramsHash != hash {
			return nil, false, "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '" + key + "' if you meant to execute a different request."
		}
		select {
		case <-e.done:
			return e, true, ""
		default:
			return nil, true, ""
		}
	}
	e := &stored{paramsHash: hash, done: make(chan struct{})}
	s.keys[key] = e
	return e, false, ""
}

// charge creates the payment intent: the one real effect.
func (s *Simulator) charge(form url.Values, key string) (int, []byte) {
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		return marshal(http.StatusBadRequest, apiError("invalid_request_error", "parameter_invalid_integer", "Invalid positive integer: amount"))
	}
	if len(form.Get("currency")) != 3 {
		return marshal(http.StatusBadRequest, apiError("invalid_request_error", "parameter_missing", "Missing required param: currency."))
	}
	pm, customer := form.Get("payment_method"), form.Get("customer")
	if pm == "" && customer == "" {
		return marshal(http.StatusBadRequest, apiError("invalid_request_error", "parameter_missing", "A payment_method or customer is required."))
	}
	pi := &PaymentIntent{
		ID: "pi_" + randomID(), Object: "payment_intent", Amount: amount, Currency: strings.ToLower(form.Get("currency")),
		Status: "succeeded", Customer: customer, PaymentMethod: pm, Description: form.Get("description"),
		Metadata: map[string]string{}, Created: time.Now().Unix(), LatestCharge: "ch_" + randomID(),
	}
	for k, v := range form {
		if strings.HasPrefix(k, "metadata[") && strings.HasSuffix(k, "]") && len(v) > 0 {
			pi.Metadata[k[len("metadata["):len(k)-1]] = v[0]
		}
	}
	decline := ""
	switch pm {
	case CardDeclined:
		decline = "generic_decline"
	case CardInsufficientFunds:
		decline = "insufficient_funds"
	}
	if decline != "" {
		pi.Status, pi.LatestCharge = "requires_payment_method", ""
	}
	s.mu.Lock()
	s.intents[pi.ID] = pi
	s.effects = append(s.effects, Effect{Seq: len(s.effects) + 1, PaymentIntentID: pi.ID, IdempotencyKey: key, Amount: amount, Currency: pi.Currency, Status: pi.Status})
	s.mu.Unlock()
	s.log.Info("provider: payment intent created", "payment_intent", pi.ID, "amount", amount, "currency", pi.Currency, "status", pi.Status)
	if decline != "" {
		e := apiError("card_error", "card_declined", "Your card was declined.")
		e["error"]["decline_code"] = decline
		e["error"]["payment_intent"] = pi
		return marshal(http.StatusPaymentRequired, e)
	}
	return marshal(http.StatusOK, pi)
}

// paramsHash identifies a request's parameters, in any order.
func paramsHash(form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s=%q;", len(k), k, form[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func apiError(typ, code, msg string) map[string]map[string]any {
	e := map[string]any{"type": typ, "message": msg}
	if code != "" {
		e["code"] = code
	}
	return map[string]map[string]any{"error": e}
}

func marshal(status int, v any) (int, []byte) {
	b, _ := json.Marshal(v)
	return status, b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	_, b := marshal(status, v)
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_"+randomID())
	w.WriteHeader(status)
	w.Write(body)
}

func randomID() string { return strings.ToLower(rand.Text()[:24]) }
