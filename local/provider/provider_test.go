package provider

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

const secret = "sk_test_sim"

// card is a confirmed charge as functions/charge sends it.
func card(pm string) url.Values {
	return url.Values{"amount": {"1000"}, "currency": {"usd"}, "confirm": {"true"}, "payment_method": {pm},
		"automatic_payment_methods[enabled]": {"true"}, "automatic_payment_methods[allow_redirects]": {"never"}}
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func (a answer) errField(name string) string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e[name].(string)
	return s
}

type client struct {
	t       *testing.T
	url     string
	version string
}

func newSim(t *testing.T) (*Simulator, *client) {
	sim := New(secret, nil)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, &client{t: t, url: srv.URL}
}

func (c *client) do(method, path, key string, form url.Values) answer {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.version != "" {
		req.Header.Set("Stripe-Version", c.version)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header}
	_ = json.Unmarshal(raw, &a.body) // an answer that is not JSON keeps a nil body, which the test's own check of it reports
	return a
}

func (c *client) create(key string, form url.Values) answer {
	c.t.Helper()
	return c.do("POST", "/v1/payment_intents", key, form)
}

// Stripe: "saves the status code and body of the first request made with a
// given idempotency key after endpoint execution begins. Retries with the
// same key return the saved response, including 500 errors."
func TestA500IsSavedUnderTheKeyAndReplayed(t *testing.T) {
	for _, kind := range []FaultKind{FailBeforeEffect, FailAfterEffect} {
		t.Run(string(kind), func(t *testing.T) {
			sim, c := newSim(t)
			sim.Inject(Fault{Kind: kind})
			first := c.create("k", card(CardVisa))
			again := c.create("k", card(CardVisa))
			if first.status != 500 || first.errField("type") != "api_error" {
				t.Fatalf("first = %d %v, want a 500 api_error", first.status, first.body)
			}
			if again.status != 500 || again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("Original-Request") != first.header.Get("Request-Id") {
				t.Fatalf("retry = %d %v, want the saved 500 replayed with Original-Request %s", again.status, again.header, first.header.Get("Request-Id"))
			}
			want := map[FaultKind]int{FailBeforeEffect: 0, FailAfterEffect: 1}[kind]
			if n := len(sim.Effects()); n != want {
				t.Fatalf("%d payment intents, want %d", n, want)
			}
		})
	}
}

// Stripe: keys may be removed once "at least 24 hours old"; "we generate a
// new request if a key is reused after the original is pruned".
func TestKeysAreKeptForTheRetentionThenPruned(t *testing.T) {
	sim, c := newSim(t)
	now := time.Now()
	sim.SetClock(func() time.Time { return now })
	first := c.create("k", card(CardVisa))
	now = now.Add(KeyRetention - time.Second)
	if r := c.create("k", card(CardVisa)); r.header.Get("Idempotent-Replayed") != "true" || r.body["id"] != first.body["id"] {
		t.Fatalf("within the retention: %d %v, want the first intent replayed", r.status, r.body["id"])
	}
	now = now.Add(time.Second)
	if r := c.create("k", card(CardVisa)); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" || r.body["id"] == first.body["id"] {
		t.Fatalf("after the retention: %d %v, want a new request", r.status, r.header)
	}
	if n := len(sim.Effects()); n != 2 {
		t.Fatalf("%d payment intents, want 2", n)
	}
}

// Stripe: "The idempotency layer compares incoming parameters to those of
// the original request and errors if they're not the same"; results are
// saved only once execution begins, so a request that failed validation
// saves nothing, nor does one that "conflicted with another that was
// executing concurrently".
func TestIdempotencyErrorsAndWhatIsNotSaved(t *testing.T) {
	sim, c := newSim(t)
	c.create("k", card(CardVisa))
	other := card(CardVisa)
	other.Set("amount", "2000")
	if r := c.create("k", other); r.status != 400 || r.errField("type") != "idempotency_error" {
		t.Fatalf("other parameters: %d %v, want 400 idempotency_error", r.status, r.body)
	}
	bad := card(CardVisa)
	bad.Set("amount", "-1")
	if r := c.create("v", bad); r.status != 400 || r.errField("type") != "invalid_request_error" {
		t.Fatalf("invalid amount: %d %v", r.status, r.body)
	}
	if r := c.create("v", card(CardVisa)); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("corrected request under the key of an invalid one: %d %v, want executed", r.status, r.body)
	}
	sim.Inject(Fault{Kind: KeyInUse})
	if r := c.create("c", card(CardVisa)); r.status != 409 || r.errField("code") != "idempotency_key_in_use" {
		t.Fatalf("key in use: %d %v, want 409", r.status, r.body)
	}
	if r := c.create("c", card(CardVisa)); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after a 409: %d, want executed (nothing was saved)", r.status)
	}
	if n := len(sim.Effects()); n != 3 {
		t.Fatalf("%d payment intents, want 3", n)
	}
}

// A request under a key whose first request still executes gets 409.
func TestConcurrentRequestWithTheKeyGets409(t *testing.T) {
	sim, c := newSim(t)
	sim.reserve("held", paramsHash("/v1/payment_intents", card(CardVisa))) // executing, not done
	if r := c.create("held", card(CardVisa)); r.status != 409 || r.errField("code") != "idempotency_key_in_use" {
		t.Fatalf("while the first executes: %d %v, want 409", r.status, r.body)
	}
}

// PaymentIntent statuses: requires_action (3D Secure) and processing are
// not final; an off-session charge that needs authentication is a decline.
func TestStatusesThatAreNotFinal(t *testing.T) {
	sim, c := newSim(t)
	for pm, want := range map[string]string{CardVisa: "succeeded", CardThreeDSRequired: "requires_action", Processing: "processing"} {
		if r := c.create("", card(pm)); r.status != 200 || r.body["status"] != want {
			t.Errorf("%s: %d %v, want status %s", pm, r.status, r.body["status"], want)
		}
	}
	off := card(CardThreeDSRequired)
	off.Set("off_session", "true")
	if r := c.create("", off); r.status != 402 || r.errField("code") != "authentication_required" {
		t.Errorf("3DS off session: %d %v, want 402 authentication_required", r.status, r.body)
	}
	if n := len(sim.Effects()); n != 4 {
		t.Fatalf("%d payment intents, want 4", n)
	}
}

// Declines: a card_error with code card_declined carries a decline_code;
// expired_card, incorrect_cvc and processing_error are codes of their own
// with no decline_code. The error carries the payment intent and method.
func TestDeclineCodes(t *testing.T) {
	_, c := newSim(t)
	for _, tc := range []struct{ pm, code, decline string }{
		{CardDeclined, "card_declined", "generic_decline"},
		{CardInsufficientFunds, "card_declined", "insufficient_funds"},
		{CardExpired, "expired_card", ""},
		{CardIncorrectCVC, "incorrect_cvc", ""},
		{CardProcessingError, "processing_error", ""},
	} {
		r := c.create("", card(tc.pm))
		e, _ := r.body["error"].(map[string]any)
		if r.status != 402 || e["type"] != "card_error" || r.errField("code") != tc.code || r.errField("decline_code") != tc.decline || e["payment_intent"] == nil || e["payment_method"] == nil {
			t.Errorf("%s: %d %v, want 402 card_error %s/%q with the intent and method", tc.pm, r.status, r.body, tc.code, tc.decline)
		}
	}
}

// The API version stripe-go v82 pins (2025-08-27.basil) is later than
// 2023-08-16, from which a confirmed intent needs a return_url unless
// redirect-based methods are refused; confirming needs a payment method,
// and one attached to a customer is used with that customer only.
func TestConfirmationRules(t *testing.T) {
	sim, c := newSim(t)
	sim.AddCustomer("cus_a", nil, "")
	sim.AddPaymentMethod("pm_a", "cus_a", CardVisa)
	redirects := card(CardVisa)
	redirects.Del("automatic_payment_methods[allow_redirects]")
	customerOnly := card("")
	customerOnly.Del("payment_method")
	customerOnly.Set("customer", "cus_a")
	attachedElsewhere := card("pm_a")
	withCustomer := card("pm_a")
	withCustomer.Set("customer", "cus_a")
	withReturnURL := card(CardVisa)
	withReturnURL.Del("automatic_payment_methods[allow_redirects]")
	withReturnURL.Set("return_url", "https://example.test/back")
	for _, tc := range []struct {
		name, version string
		form          url.Values
		status        int
		param         string
	}{
		{"no return_url, redirects allowed", "2025-08-27.basil", redirects, 400, "return_url"},
		{"no return_url, before 2023-08-16", "2022-11-15", redirects, 200, ""},
		{"return_url given", "2025-08-27.basil", withReturnURL, 200, ""},
		{"customer without a payment method", "2025-08-27.basil", customerOnly, 400, "payment_method"},
		{"attached method without its customer", "2025-08-27.basil", attachedElsewhere, 400, "payment_method"},
		{"attached method with its customer", "2025-08-27.basil", withCustomer, 200, ""},
	} {
		c.version = tc.version
		r := c.create("", tc.form)
		if r.status != tc.status || r.errField("param") != tc.param {
			t.Errorf("%s: %d %v, want %d on %q", tc.name, r.status, r.body, tc.status, tc.param)
		}
	}
}

// Search is eventually consistent: an intent appears after the index lag.
func TestSearchByMetadataAfterTheIndexLag(t *testing.T) {
	sim, c := newSim(t)
	now := time.Now()
	sim.SetClock(func() time.Time { return now })
	sim.SetSearchLag(time.Minute)
	f := card(CardVisa)
	f.Set("metadata[op]", "op-1")
	created := c.create("k", f)
	search := func() []any {
		r := c.do("GET", "/v1/payment_intents/search?query="+url.QueryEscape("metadata['op']:'op-1'"), "", nil)
		data, _ := r.body["data"].([]any)
		return data
	}
	if got := search(); len(got) != 0 {
		t.Fatalf("found %d before the lag", len(got))
	}
	now = now.Add(time.Minute)
	got := search()
	if len(got) != 1 || got[0].(map[string]any)["id"] != created.body["id"] {
		t.Fatalf("after the lag: %v, want %v", got, created.body["id"])
	}
	if r := c.do("GET", "/v1/customers/cus_missing", "", nil); r.status != 404 || r.errField("code") != "resource_missing" {
		t.Fatalf("unknown customer: %d %v", r.status, r.body)
	}
}

func ids(t *testing.T, a answer) []string {
	t.Helper()
	data, _ := a.body["data"].([]any)
	var out []string
	for _, d := range data {
		out = append(out, d.(map[string]any)["id"].(string))
	}
	return out
}

// The list API is the read-after-write path: an intent is listed the moment
// it exists, whatever the search lag, newest first, ten to a page by
// default with has_more, paged by starting_after and ending_before, and
// filtered by created and customer.
func TestListIsConsistentPagedAndFiltered(t *testing.T) {
	sim, c := newSim(t)
	now := time.Now().Truncate(time.Second)
	sim.SetClock(func() time.Time { return now })
	sim.SetSearchLag(SearchWorstLag)
	sim.AddCustomer("cus_1", nil, "")
	var made []string // oldest first
	for i := range 25 {
		f := card(CardVisa)
		if i%5 == 0 {
			f.Set("customer", "cus_1")
		}
		made = append(made, c.create("", f).body["id"].(string))
		now = now.Add(time.Second)
	}
	first := c.do("GET", "/v1/payment_intents", "", nil)
	if got := ids(t, first); len(got) != 10 || first.body["has_more"] != true || got[0] != made[24] || first.body["object"] != "list" {
		t.Fatalf("first page: %v has_more=%v, want the newest ten and has_more", got, first.body["has_more"])
	}
	var all []string
	for cursor := ""; ; {
		q := "?limit=7"
		if cursor != "" {
			q += "&starting_after=" + cursor
		}
		r := c.do("GET", "/v1/payment_intents"+q, "", nil)
		page := ids(t, r)
		all = append(all, page...)
		if r.body["has_more"] != true {
			break
		}
		cursor = page[len(page)-1]
	}
	if len(all) != 25 || all[0] != made[24] || all[24] != made[0] {
		t.Fatalf("every page: %d intents, want all 25 newest first", len(all))
	}
	if back := ids(t, c.do("GET", "/v1/payment_intents?limit=3&ending_before="+made[10], "", nil)); len(back) != 3 || back[0] != made[13] || back[2] != made[11] {
		t.Fatalf("ending_before: %v, want the three made just after", back)
	}
	start := now.Add(-25 * time.Second).Unix()
	window := c.do("GET", "/v1/payment_intents?limit=100&created[gte]="+strconv.FormatInt(start+20, 10)+"&created[lt]="+strconv.FormatInt(start+23, 10), "", nil)
	if got := ids(t, window); len(got) != 3 || got[0] != made[22] || got[2] != made[20] {
		t.Fatalf("created window: %v, want intents 20 to 22", got)
	}
	if got := ids(t, c.do("GET", "/v1/payment_intents?customer=cus_1", "", nil)); len(got) != 5 {
		t.Fatalf("customer filter: %v, want 5", got)
	}
	for _, q := range []string{"limit=0", "limit=101", "created[gte]=soon", "starting_after=pi_nope", "starting_after=" + made[1] + "&ending_before=" + made[2]} {
		if r := c.do("GET", "/v1/payment_intents?"+q, "", nil); r.status != 400 || r.errField("type") != "invalid_request_error" {
			t.Errorf("%s: %d %v, want 400", q, r.status, r.body)
		}
	}
}

// Search as Stripe documents it: up to an hour behind in an outage, ten
// results by default with has_more and next_page, and an account may have
// no search at all.
func TestSearchLagsPagesAndCanBeOff(t *testing.T) {
	sim, c := newSim(t)
	now := time.Now()
	sim.SetClock(func() time.Time { return now })
	if err := sim.ConfigureSearch("1h"); err != nil {
		t.Fatal(err)
	}
	for range 12 {
		f := card(CardVisa)
		f.Set("metadata[op]", "op-1")
		c.create("", f)
	}
	q := "/v1/payment_intents/search?query=" + url.QueryEscape("metadata['op']:'op-1'")
	now = now.Add(SearchWorstLag - time.Second)
	if r := c.do("GET", q, "", nil); len(ids(t, r)) != 0 {
		t.Fatalf("found %d within the hour", len(ids(t, r)))
	}
	now = now.Add(time.Second)
	first := c.do("GET", q, "", nil)
	next, _ := first.body["next_page"].(string)
	if len(ids(t, first)) != 10 || first.body["has_more"] != true || next == "" {
		t.Fatalf("first page: %d results has_more=%v next_page=%v, want 10 and more", len(ids(t, first)), first.body["has_more"], first.body["next_page"])
	}
	rest := c.do("GET", q+"&page="+url.QueryEscape(next), "", nil)
	if len(ids(t, rest)) != 2 || rest.body["has_more"] != false || rest.body["next_page"] != nil {
		t.Fatalf("second page: %v, want the other 2 and no more", rest.body)
	}
	if r := c.do("GET", q+"&limit=200", "", nil); r.status != 400 {
		t.Fatalf("limit 200: %d, want 400", r.status)
	}
	if err := sim.ConfigureSearch("off"); err != nil {
		t.Fatal(err)
	}
	if r := c.do("GET", q, "", nil); r.status != 400 || r.errField("type") != "invalid_request_error" {
		t.Fatalf("search off: %d %v, want 400", r.status, r.body)
	}
	if err := sim.ConfigureSearch("soon"); err == nil {
		t.Fatal("ConfigureSearch(soon) = nil, want an error")
	}
}

// Metadata as Stripe limits it: 50 keys, keys up to 40 characters without
// square brackets, values up to 500 characters. A refused request saves
// nothing under its key and charges nothing.
func TestMetadataIsHeldToStripesLimits(t *testing.T) {
	sim, c := newSim(t)
	with := func(n int, key func(i int) string, value string) url.Values {
		f := card(CardVisa)
		for i := range n {
			f.Set("metadata["+key(i)+"]", value)
		}
		return f
	}
	numbered := func(i int) string { return "k" + strconv.Itoa(i) }
	for _, tc := range []struct {
		name string
		form url.Values
		ok   bool
	}{
		{"50 keys", with(50, numbered, "v"), true},
		{"51 keys", with(51, numbered, "v"), false},
		{"a 40-character key", with(1, func(int) string { return strings.Repeat("é", 40) }, "v"), true},
		{"a 41-character key", with(1, func(int) string { return strings.Repeat("k", 41) }, "v"), false},
		{"a 500-character value", with(1, numbered, strings.Repeat("v", 500)), true},
		{"a 501-character value", with(1, numbered, strings.Repeat("v", 501)), false},
		{"a bracketed key", with(1, func(int) string { return "a[b" }, "v"), false},
		{"a closing bracket", with(1, func(int) string { return "a]b" }, "v"), false},
	} {
		before := len(sim.Effects())
		r := c.create("k-"+tc.name, tc.form)
		if tc.ok != (r.status == 200) || !tc.ok && (r.errField("param") != "metadata" || len(sim.Effects()) != before) {
			t.Errorf("%s: %d %v, want ok=%v", tc.name, r.status, r.body, tc.ok)
		}
		if !tc.ok {
			if again := c.create("k-"+tc.name, card(CardVisa)); again.status != 200 || again.header.Get("Idempotent-Replayed") != "" {
				t.Errorf("%s: the corrected request under the key = %d, want a new 200", tc.name, again.status)
			}
		}
	}
}

// An intent waiting for authentication or settlement is resolved as the
// customer or the network would, and read back so.
func TestResolveFinishesWhatAnIntentWaitsFor(t *testing.T) {
	sim, c := newSim(t)
	for _, tc := range []struct {
		pm      string
		succeed bool
		status  string
		code    string
	}{
		{CardThreeDSRequired, true, "succeeded", ""},
		{CardThreeDSRequired, false, "requires_payment_method", "payment_intent_authentication_failure"},
		{Processing, true, "succeeded", ""},
		{Processing, false, "requires_payment_method", "card_declined"},
	} {
		id := c.create("", card(tc.pm)).body["id"].(string)
		if err := sim.Resolve(id, tc.succeed); err != nil {
			t.Fatal(err)
		}
		got := c.do("GET", "/v1/payment_intents/"+id, "", nil).body
		lpe, _ := got["last_payment_error"].(map[string]any)
		if got["status"] != tc.status || tc.code != "" && lpe["code"] != tc.code || got["next_action"] != nil {
			t.Errorf("%s succeed=%v: %v, want %s %s", tc.pm, tc.succeed, got, tc.status, tc.code)
		}
		if err := sim.Resolve(id, true); err == nil {
			t.Errorf("%s: resolved twice", tc.pm)
		}
	}
}
