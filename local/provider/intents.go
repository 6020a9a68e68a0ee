package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// stored is the result saved under an idempotency key.
type stored struct {
	paramsHash string
	created    time.Time
	done       chan struct{} // closed once status and body are set
	status     int
	body       []byte
	requestID  string // the first request's id: Original-Request on replays
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
	fault, faulted := s.nextFault(r.PostForm.Get("description"))
	if faulted && !fault.beforeTheKey(w, r) {
		return
	}
	key := r.Header.Get("Idempotency-Key")
	entry, replay, conflict := s.reserve(key, paramsHash(r.URL.Path, r.PostForm))
	switch {
	case conflict != "":
		writeJSON(w, http.StatusBadRequest, apiError("idempotency_error", "", conflict))
		return
	case replay:
		replayed(w, entry, faulted && fault.Kind == DropAfterEffect)
		return
	}
	status, body, began := s.execute(r, key, fault, faulted)
	s.save(key, entry, status, body, began)
	if faulted && fault.Kind == HangAfterEffect {
		fault.reached()
		if !wait(r, fault.Delay) {
			return
		}
	}
	if faulted && fault.Kind == DropAfterEffect && drop(w) {
		return
	}
	writeRaw(w, status, body, entryRequestID(entry))
}

// beforeTheKey acts out the faults that come before the key is looked at
// (all but HangAfterEffect are reached here), and says whether the request
// goes on: a delay does, an answer that is not the provider's and a 409 do
// not.
func (f Fault) beforeTheKey(w http.ResponseWriter, r *http.Request) bool {
	if f.Kind != HangAfterEffect {
		f.reached()
	}
	switch f.Kind {
	case Delay:
		return wait(r, f.Delay)
	case NotJSON:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(orDefault(f.Status, http.StatusForbidden))
		_, _ = w.Write([]byte("<html><body><h1>Request blocked</h1></body></html>")) // a failed write is the client gone: there is no one left to tell
		return false
	case KeyInUse:
		writeKeyInUse(w)
		return false
	}
	return true
}

// replayed answers a request under a key already used with the same
// parameters: 409 while the first still executes (entry nil), else the
// saved answer marked as a replay, or, when dropped, no answer at all (the
// network loses a replay's answer as it does any other).
func replayed(w http.ResponseWriter, entry *stored, dropped bool) {
	switch {
	case entry == nil:
		writeKeyInUse(w)
	case dropped:
		drop(w)
	default:
		w.Header().Set("Idempotent-Replayed", "true")
		w.Header().Set("Original-Request", entry.requestID)
		writeRaw(w, entry.status, entry.body, "")
	}
}

// drop closes the connection instead of answering; false if it cannot.
func drop(w http.ResponseWriter) bool {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close() // the dropped connection is the fault: how the close went changes nothing
			return true
		}
	}
	return false
}

// execute validates the request and, once valid, runs it: the point after
// which Stripe saves the result under the key.
func (s *Simulator) execute(r *http.Request, key string, fault Fault, faulted bool) (status int, body []byte, began bool) {
	if status, body, ok := s.validate(r.Header.Get("Stripe-Version"), r.PostForm); !ok {
		return status, body, false
	}
	if faulted && fault.Kind == FailBeforeEffect {
		status := orDefault(fault.Status, http.StatusInternalServerError)
		if status == http.StatusTooManyRequests {
			// Rate limiting turns a request away before it executes, so
			// nothing is saved under its key and a retry runs it.
			status, body := marshal(status, apiError("invalid_request_error", "rate_limit", "Too many requests hit the API too quickly."))
			return status, body, false
		}
		status, body := marshal(status, apiError("api_error", "", "simulated failure before any effect"))
		return status, body, true
	}
	status, body = s.charge(r.PostForm, key)
	if faulted && fault.Kind == FailAfterEffect {
		status, body = marshal(orDefault(fault.Status, http.StatusInternalServerError), apiError("api_error", "", "simulated failure after the effect"))
	}
	return status, body, true
}

// save records the result under the key, or, for a request whose execution
// never began (it failed validation), frees the key: Stripe saves nothing
// then, so a corrected request may reuse it.
func (s *Simulator) save(key string, entry *stored, status int, body []byte, began bool) {
	if entry == nil {
		return
	}
	entry.status, entry.body = status, body
	close(entry.done)
	if !began {
		s.mu.Lock()
		delete(s.keys, key)
		s.mu.Unlock()
	}
}

func entryRequestID(e *stored) string {
	if e == nil {
		return ""
	}
	return e.requestID
}

func writeKeyInUse(w http.ResponseWriter) {
	// Stripe's answer while another request with the key executes; it
	// saves nothing, and the client may retry.
	writeJSON(w, http.StatusConflict, apiError("idempotency_error", "idempotency_key_in_use",
		"There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through). Please try again later."))
}

func wait(r *http.Request, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// reserve claims key for a first request, or finds what to replay. A
// replay with a nil entry means the first request is still executing. A key
// older than the retention is pruned first, and its request is a new one.
func (s *Simulator) reserve(key, hash string) (entry *stored, replay bool, conflict string) {
	if key == "" {
		return nil, false, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if e, ok := s.keys[key]; ok && now.Sub(e.created) >= s.retention {
		delete(s.keys, key)
	}
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
	e := &stored{paramsHash: hash, created: now, done: make(chan struct{}), requestID: "req_" + randomID()}
	s.keys[key] = e
	return e, false, ""
}

// paramsHash identifies a request's endpoint and parameters, in any order.
func paramsHash(path string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	fmt.Fprintf(h, "%s;", path)
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s=%q;", len(k), k, form[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// threeDecimal are the currencies whose amounts Stripe takes in thousandths
// and requires to end in 0.
var threeDecimal = map[string]bool{"bhd": true, "jod": true, "kwd": true, "omr": true, "tnd": true}

func invalid(code, param, msg string) (int, []byte, bool) {
	e := apiError("invalid_request_error", code, msg)
	if param != "" {
		e["error"]["param"] = param
	}
	status, body := marshal(http.StatusBadRequest, e)
	return status, body, false
}

// validate refuses what Stripe refuses before executing: bad amounts, and
// the confirmation rules of the API version.
func (s *Simulator) validate(version string, form url.Values) (int, []byte, bool) {
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	currency := strings.ToLower(form.Get("currency"))
	switch {
	case err != nil || amount <= 0:
		return invalid("parameter_invalid_integer", "amount", "Invalid positive integer")
	case len(currency) != 3:
		return invalid("parameter_missing", "currency", "Missing required param: currency.")
	case threeDecimal[currency] && amount%10 != 0:
		return invalid("invalid_amount", "amount", "Amounts in "+strings.ToUpper(currency)+" must end in 0 (three-decimal currency).")
	case currency == "usd" && amount < 50:
		return invalid("amount_too_small", "amount", "Amount must be at least $0.50 usd")
	}
	if status, body, ok := validateMetadata(form); !ok {
		return status, body, ok
	}
	if form.Get("confirm") != "true" {
		return 0, nil, true
	}
	return s.validateConfirm(version, form)
}

// Stripe's metadata limits: "up to 50 keys, with key names up to 40
// characters long and values up to 500 characters long", and "don't use
// square brackets ([ or ]) in keys". Characters are counted as Unicode code
// points, and an empty key is refused: choices of the simulator's, where
// the docs do not say.
const (
	MaxMetadataKeys  = 50
	MaxMetadataKey   = 40
	MaxMetadataValue = 500
)

// validateMetadata holds the form's metadata[...] parameters to Stripe's
// limits; a key with a bracket inside arrives as metadata[a[b]] or
// metadata[a]b] and is refused as Stripe refuses it.
func validateMetadata(form url.Values) (int, []byte, bool) {
	n := 0
	for name, values := range form {
		key, ok := strings.CutPrefix(name, "metadata[")
		if !ok {
			continue
		}
		key, ok = strings.CutSuffix(key, "]")
		n++
		switch {
		case !ok || key == "" || strings.ContainsAny(key, "[]"):
			return invalid("parameter_invalid", "metadata", "Invalid metadata key: square brackets are not allowed in metadata keys, and a key cannot be empty.")
		case utf8.RuneCountInString(key) > MaxMetadataKey:
			return invalid("parameter_invalid", "metadata", "Metadata keys can have up to "+strconv.Itoa(MaxMetadataKey)+" characters; "+key+" is longer.")
		case len(values) > 0 && utf8.RuneCountInString(values[0]) > MaxMetadataValue:
			return invalid("parameter_invalid", "metadata", "Metadata values can have up to "+strconv.Itoa(MaxMetadataValue)+" characters; the value of "+key+" is longer.")
		}
	}
	if n > MaxMetadataKeys {
		return invalid("parameter_invalid", "metadata", "Invalid metadata: metadata can have up to "+strconv.Itoa(MaxMetadataKeys)+" keys, but "+strconv.Itoa(n)+" were given.")
	}
	return 0, nil, true
}

// validateConfirm holds the rules for confirm=true: a payment method that
// belongs to the customer given, and, from API version 2023-08-16, either a
// return_url or redirects refused.
func (s *Simulator) validateConfirm(version string, form url.Values) (int, []byte, bool) {
	pmID, customer := form.Get("payment_method"), form.Get("customer")
	s.mu.Lock()
	pm, pmFound := s.lookupMethod(pmID)
	_, custFound := s.customers[customer]
	s.mu.Unlock()
	redirectsRefused := form.Get("automatic_payment_methods[allow_redirects]") == "never" || len(form["payment_method_types[]"])+len(form["payment_method_types[0]"]) > 0
	switch {
	case customer != "" && !custFound:
		return invalid("resource_missing", "customer", "No such customer: '"+customer+"'")
	case pmID == "":
		return invalid("payment_intent_unexpected_state", "payment_method", "You cannot confirm this PaymentIntent because it's missing a payment method. To confirm the PaymentIntent with "+orNone(customer)+", specify a payment method attached to this customer along with the customer ID.")
	case !pmFound:
		return invalid("resource_missing", "payment_method", "No such PaymentMethod: '"+pmID+"'")
	case pm.Customer != nil && *pm.Customer != customer:
		return invalid("parameter_invalid", "payment_method", "The provided PaymentMethod belongs to another Customer. Provide the Customer it is attached to.")
	case (version == "" || version >= APIVersionAutomaticPaymentMethods) && form.Get("return_url") == "" && !redirectsRefused:
		return invalid("", "return_url", "A `return_url` must be specified because this Payment Intent is configured to automatically accept the payment methods enabled in the Dashboard, some of which may require a full page redirect to succeed. If you do not want to accept redirect-based payment methods, set `automatic_payment_methods[enabled]` to `true` and `automatic_payment_methods[allow_redirects]` to `never` when creating Setup Intents and Payment Intents.")
	}
	return 0, nil, true
}

func orNone(customer string) string {
	if customer == "" {
		return "no customer"
	}
	return customer
}

// charge creates the payment intent and confirms it: the one real effect.
func (s *Simulator) charge(form url.Values, key string) (int, []byte) {
	amount, _ := strconv.ParseInt(form.Get("amount"), 10, 64)
	pmID := form.Get("payment_method")
	s.mu.Lock()
	pm, _ := s.lookupMethod(pmID)
	now := s.now()
	s.mu.Unlock()
	pi := &PaymentIntent{
		ID: "pi_" + randomID(), Object: "payment_intent", Amount: amount, Currency: strings.ToLower(form.Get("currency")),
		Status: "requires_confirmation", Customer: form.Get("customer"), PaymentMethod: pmID, Description: form.Get("description"),
		Metadata: map[string]string{}, Created: now.Unix(),
	}
	pi.ClientSecret = pi.ID + "_secret_" + randomID()
	for k, v := range form {
		if strings.HasPrefix(k, "metadata[") && strings.HasSuffix(k, "]") && len(v) > 0 {
			pi.Metadata[k[len("metadata["):len(k)-1]] = v[0]
		}
	}
	cardErr := confirm(pi, pm, form.Get("confirm") == "true", form.Get("off_session") == "true")
	s.mu.Lock()
	s.seq++
	pi.seq = s.seq
	s.intents[pi.ID] = pi
	s.effects = append(s.effects, Effect{Seq: len(s.effects) + 1, PaymentIntentID: pi.ID, IdempotencyKey: key, Amount: amount,
		Currency: pi.Currency, Status: pi.Status, Customer: pi.Customer, PaymentMethod: pmID, Description: pi.Description})
	s.mu.Unlock()
	s.log.Info("provider: payment intent created", "payment_intent", pi.ID, "amount", amount, "currency", pi.Currency, "status", pi.Status)
	if cardErr != nil {
		cardErr["error"]["payment_intent"] = pi
		cardErr["error"]["payment_method"] = pm // as Stripe's card errors carry it
		return marshal(http.StatusPaymentRequired, cardErr)
	}
	return marshal(http.StatusOK, pi)
}

func timeOf(unix int64) time.Time { return time.Unix(unix, 0) }

// confirm moves the intent to the status its payment method gives, and
// returns the card_error when the card fails.
func confirm(pi *PaymentIntent, pm *PaymentMethod, confirmed, offSession bool) apiErr {
	if !confirmed || pm == nil {
		return nil
	}
	tc := testCards[pm.test]
	if tc.status == "requires_action" && offSession {
		tc = testCard{code: "authentication_required", declineCode: "authentication_required"}
	}
	if tc.code == "" {
		pi.Status = orStatus(tc.status)
		switch pi.Status {
		case "succeeded":
			pi.LatestCharge = "ch_" + randomID()
		case "requires_action":
			pi.NextAction = map[string]string{"type": "use_stripe_sdk"}
		}
		return nil
	}
	pi.Status = "requires_payment_method"
	msg := map[string]string{"card_declined": "Your card was declined.", "expired_card": "Your card has expired.",
		"incorrect_cvc": "Your card's security code is incorrect.", "processing_error": "An error occurred while processing your card. Try again in a little bit.",
		"authentication_required": "Your card was declined. This transaction requires authentication."}[tc.code]
	e := apiError("card_error", tc.code, msg)
	if tc.declineCode != "" {
		e["error"]["decline_code"] = tc.declineCode
	}
	e["error"]["charge"] = "ch_" + randomID()
	pi.LastPaymentError = map[string]any{"type": "card_error", "code": tc.code, "decline_code": tc.declineCode, "message": msg}
	return e
}

func orStatus(s string) string {
	if s == "" {
		return "succeeded"
	}
	return s
}

// Resolve finishes what a payment intent waits for, as the customer or the
// payment network would: a requires_action intent's authentication (3-D
// Secure, done by the customer in Stripe.js) and a processing intent's
// settlement. succeed moves it to succeeded with a charge; otherwise it goes
// back to requires_payment_method with its last_payment_error: Stripe's
// payment_intent_authentication_failure for a failed authentication, a
// generic decline for a failed asynchronous payment (a choice of the
// simulator's: Stripe's code there depends on the payment method). Other
// statuses are an error.
func (s *Simulator) Resolve(id string, succeed bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.intents[id]
	if !ok || pi.Status != "requires_action" && pi.Status != "processing" {
		return fmt.Errorf("provider: no payment intent %q waiting for an action or a settlement", id)
	}
	was := pi.Status
	pi.NextAction = nil
	if succeed {
		pi.Status, pi.LatestCharge = "succeeded", "ch_"+randomID()
		return nil
	}
	pi.Status = "requires_payment_method"
	pi.LastPaymentError = map[string]any{"type": "card_error", "code": "card_declined", "decline_code": "generic_decline", "message": "Your card was declined."}
	if was == "requires_action" {
		pi.LastPaymentError = map[string]any{"type": "invalid_request_error", "code": "payment_intent_authentication_failure",
			"message": "The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again."}
	}
	return nil
}
