package provider

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SearchWorstLag is how far behind Stripe's search index can be: "under
// normal operating conditions, data is searchable in less than a minute.
// Occasionally, propagation of new or updated data can be up to an hour
// behind during outages."
const SearchWorstLag = time.Hour

// SearchEnv names the variable that tests and the local stack read to set
// the simulator's search (ConfigureSearch): "off", or a lag as a Go
// duration ("0s", "30m", "1h").
const SearchEnv = "PROVIDER_SIM_SEARCH"

// ConfigureSearch sets the search from value as SearchEnv has it, or from
// the environment when value is empty; with neither, search lags by
// SearchWorstLag, Stripe's documented worst case.
func (s *Simulator) ConfigureSearch(value string) error {
	if value == "" {
		value = os.Getenv(SearchEnv)
	}
	switch value {
	case "":
		s.SetSearchLag(SearchWorstLag)
		return nil
	case "off":
		s.SetSearchAvailable(false)
		return nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d < 0 {
		return fmt.Errorf("provider: %s=%q: want \"off\" or a duration such as 1h", SearchEnv, value)
	}
	s.SetSearchLag(d)
	return nil
}

// SetSearchAvailable switches the search API on or off. Stripe does not
// offer search everywhere ("Search functionality is not available to
// merchants in India"); its docs do not say how the endpoint answers such
// an account, so the simulator's choice is a 400 invalid_request_error
// with no code.
func (s *Simulator) SetSearchAvailable(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.searchOff = !on
}

// Page sizes, as Stripe documents them for lists and searches: "limit can
// range between 1 and 100, and the default is 10".
const (
	defaultLimit = 10
	maxLimit     = 100
)

func pageLimit(q url.Values) (int, bool) {
	v := q.Get("limit")
	if v == "" {
		return defaultLimit, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1 && n <= maxLimit
}

// newestFirst is the order of Stripe's lists and of the simulator's
// searches: by creation, newest first. Intents created in the same second
// are ordered by when the simulator made them (Stripe's docs do not say).
func newestFirst(found []*PaymentIntent) {
	sort.Slice(found, func(i, j int) bool { return found[i].seq > found[j].seq })
}

// list answers GET /v1/payment_intents: every intent, at once (Stripe's
// list APIs are the read-after-write path search is not), filtered by
// customer and by created (an exact time, or gt, gte, lt, lte), newest
// first, limit at a time, paged by starting_after or ending_before (object
// ids; giving both is refused, a choice of the simulator's).
func (s *Simulator) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := pageLimit(q)
	if !ok {
		writeJSON(w, http.StatusBadRequest, paramError("parameter_invalid_integer", "limit", "Invalid integer: "+q.Get("limit")+"; must be between 1 and 100"))
		return
	}
	within, bad := createdFilter(q)
	if bad != "" {
		writeJSON(w, http.StatusBadRequest, paramError("parameter_invalid_integer", bad, "Invalid integer: "+q.Get(bad)))
		return
	}
	after, before := q.Get("starting_after"), q.Get("ending_before")
	if after != "" && before != "" {
		writeJSON(w, http.StatusBadRequest, paramError("parameter_invalid", "ending_before", "You may only specify one of these parameters: starting_after, ending_before."))
		return
	}
	s.mu.Lock()
	var all []*PaymentIntent
	for _, pi := range s.intents {
		if within(pi.Created) && (q.Get("customer") == "" || pi.Customer == q.Get("customer")) {
			all = append(all, pi)
		}
	}
	cursor := s.intents[after+before]
	s.mu.Unlock()
	if (after != "" || before != "") && cursor == nil {
		param := "starting_after"
		if before != "" {
			param = "ending_before"
		}
		writeJSON(w, http.StatusBadRequest, paramError("resource_missing", param, "No such payment_intent: '"+after+before+"'"))
		return
	}
	newestFirst(all)
	page, more := pageOf(all, cursor, before != "", limit)
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "url": "/v1/payment_intents", "has_more": more, "data": page})
}

// pageOf is the page of limit intents after cursor in newest-first order
// (before: the page just before it), and whether more lie beyond it in the
// direction of paging.
func pageOf(all []*PaymentIntent, cursor *PaymentIntent, before bool, limit int) ([]*PaymentIntent, bool) {
	if cursor == nil {
		return all[:min(limit, len(all))], len(all) > limit
	}
	i := sort.Search(len(all), func(i int) bool { return all[i].seq <= cursor.seq })
	if before {
		start := max(0, i-limit)
		return all[start:i], start > 0
	}
	if i < len(all) && all[i].seq == cursor.seq {
		i++
	}
	rest := all[i:]
	return rest[:min(limit, len(rest))], len(rest) > limit
}

// createdFilter reads created=<unix> or created[gt|gte|lt|lte]=<unix>; bad
// names the parameter that is not an integer.
func createdFilter(q url.Values) (within func(int64) bool, bad string) {
	type bound struct {
		name string
		ok   func(c, v int64) bool
	}
	bounds := []bound{
		{"created", func(c, v int64) bool { return c == v }},
		{"created[gt]", func(c, v int64) bool { return c > v }},
		{"created[gte]", func(c, v int64) bool { return c >= v }},
		{"created[lt]", func(c, v int64) bool { return c < v }},
		{"created[lte]", func(c, v int64) bool { return c <= v }},
	}
	var checks []func(int64) bool
	for _, b := range bounds {
		if !q.Has(b.name) {
			continue
		}
		v, err := strconv.ParseInt(q.Get(b.name), 10, 64)
		if err != nil {
			return nil, b.name
		}
		checks = append(checks, func(c int64) bool { return b.ok(c, v) })
	}
	return func(c int64) bool {
		for _, ok := range checks {
			if !ok(c) {
				return false
			}
		}
		return true
	}, ""
}

// searchQuery is the one form of Stripe's search query language served:
// metadata['key']:'value'.
var searchQuery = regexp.MustCompile(`^metadata\['([^']+)'\]:'([^']*)'$`)

// search answers GET /v1/payment_intents/search. As Stripe's search, it is
// eventually consistent: an intent is found only the search lag after its
// creation (SetSearchLag, up to SearchWorstLag); it can be switched off
// (SetSearchAvailable). Results come limit at a time, newest first (Stripe
// documents no order for search; this is the simulator's), with has_more
// and next_page, the token to send as page for the next ones.
func (s *Simulator) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	m := searchQuery.FindStringSubmatch(strings.TrimSpace(q.Get("query")))
	limit, limitOK := pageLimit(q)
	after, pageOK := searchPage(q.Get("page"))
	s.mu.Lock()
	off, now, lag := s.searchOff, s.now(), s.searchLag
	var found []*PaymentIntent
	for _, pi := range s.intents {
		if m != nil && pi.Metadata[m[1]] == m[2] && !now.Before(timeOf(pi.Created).Add(lag)) && pi.seq < after {
			found = append(found, pi)
		}
	}
	s.mu.Unlock()
	switch {
	case off:
		writeJSON(w, http.StatusBadRequest, apiError("invalid_request_error", "", "Search is not available for this account."))
		return
	case m == nil:
		writeJSON(w, http.StatusBadRequest, apiError("invalid_request_error", "parameter_invalid", "The simulator serves only queries of the form metadata['key']:'value'."))
		return
	case !limitOK:
		writeJSON(w, http.StatusBadRequest, paramError("parameter_invalid_integer", "limit", "Invalid integer: "+q.Get("limit")+"; must be between 1 and 100"))
		return
	case !pageOK:
		writeJSON(w, http.StatusBadRequest, paramError("parameter_invalid", "page", "Invalid page: "+q.Get("page")))
		return
	}
	newestFirst(found)
	page, more := found[:min(limit, len(found))], len(found) > limit
	var next any
	if more {
		next = "page_" + strconv.Itoa(page[len(page)-1].seq)
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "search_result", "url": "/v1/payment_intents/search", "has_more": more, "next_page": next, "data": page})
}

// searchPage reads a next_page token: the results after it are those made
// before the last one of the page it ended.
func searchPage(token string) (int, bool) {
	if token == "" {
		return int(^uint(0) >> 1), true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(token, "page_"))
	return n, err == nil && strings.HasPrefix(token, "page_")
}

func paramError(code, param, msg string) apiErr {
	e := apiError("invalid_request_error", code, msg)
	e["error"]["param"] = param
	return e
}
