package devstack_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idemclient"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// TestClientAgainstTheStack sends charges through pkg/idemclient to the
// local API (the JWT authorizer, the charge function's bootstrap under the
// Runtime Interface Emulator, DynamoDB on the local engine, the provider
// simulator), with a fault on the way. The client must retry on its own
// and end each case holding the committed response, with exactly one
// charge at the provider. One stack serves every case.
func TestClientAgainstTheStack(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end, pkg/idemclient against the whole local stack: make test runs it")
	}
	s := startStack(t, "client-", devstack.Options{
		// Long enough that a second request surely finds the first in
		// progress, and the first's held provider call fits in its lease.
		Lease: "5s",
	})
	st := &stackClient{s: s, token: tokenFor(t, s, "client-tester")}

	t.Run("a 422 comes back at once, not retried", func(t *testing.T) {
		before, key := len(s.Sim.Effects()), newKey()
		first := st.charge(t, s.APIURL, key, visa(100))
		other := st.charge(t, s.APIURL, key, visa(999))
		if other.status != 422 || other.code != "idempotency_key_reused" || other.attempts != 1 || len(other.retries) != 0 {
			t.Fatalf("the other request: %+v, want one attempt answered 422 idempotency_key_reused", other)
		}
		first.want(t, 201, false, 1)
		st.oneCharge(t, before, key, visa(100), first)
	})

	t.Run("an answer dropped after the commit", func(t *testing.T) {
		proxy, err := faultproxy.New(s.APIURL)
		if err != nil {
			t.Fatal(err)
		}
		front := httptest.NewServer(proxy)
		defer front.Close()
		proxy.Inject(faultproxy.Fault{Kind: faultproxy.CommitThenDrop})
		before, key := len(s.Sim.Effects()), newKey()
		got := st.charge(t, front.URL, key, visa(200))
		got.want(t, 201, true, 2)
		if r := got.retries[0]; r.StatusCode != 0 || r.Err == nil {
			t.Fatalf("the retry was after %+v, want after the dropped connection", r)
		}
		st.oneCharge(t, before, key, visa(200), got)
	})

	t.Run("503 with Retry-After", func(t *testing.T) {
		// The provider says 429; the charge answers 503 provider_busy,
		// Retry-After: 2, and nothing is stored.
		s.Sim.Inject(provider.Fault{Kind: provider.FailBeforeEffect, Status: http.StatusTooManyRequests})
		before, key := len(s.Sim.Effects()), newKey()
		got := st.charge(t, s.APIURL, key, visa(300))
		got.want(t, 201, false, 2)
		if r := got.retries[0]; r.StatusCode != 503 || r.Code != "provider_busy" || r.Wait < 2*time.Second {
			t.Fatalf("the retry was after %+v, want a 503 provider_busy waited out for its Retry-After of 2s", r)
		}
		st.oneCharge(t, before, key, visa(300), got)
	})

	t.Run("409 while the first attempt is in progress", func(t *testing.T) {
		s.Sim.Inject(provider.Fault{Kind: provider.Delay, Delay: 2500 * time.Millisecond})
		before, key := len(s.Sim.Effects()), newKey()
		first := st.chargeInBackground(t, key, visa(400))
		waitFor(t, "the first request at the provider", func() bool { return s.Sim.Pending() > 0 })
		second := st.charge(t, s.APIURL, key, visa(400)) // another caller, the same key
		if r := second.retries; len(r) == 0 || r[0].StatusCode != 409 || r[0].Code != idemclient.CodeInProgress {
			t.Fatalf("the second request's retries: %+v, want a 409 request_in_progress first", r)
		}
		one := first()
		if one.status != 201 || second.status != 201 || one.replayed == second.replayed || one.body != second.body {
			t.Fatalf("answers %+v and %+v: want the same 201, one fresh and one replayed", one, second)
		}
		st.oneCharge(t, before, key, visa(400), one)
	})

	t.Run("kill -9 of the function mid-request, then the takeover after the lease", func(t *testing.T) {
		s.Sim.Inject(provider.Fault{Kind: provider.HangAfterEffect, Delay: 30 * time.Second})
		before, key := len(s.Sim.Effects()), newKey()
		first := st.chargeInBackground(t, key, visa(500))
		waitFor(t, "the provider's charge", func() bool { return len(s.Sim.Effects()) > before })
		if killed := s.API.Crash(); killed != 1 {
			t.Fatalf("killed %d function processes, want the one running the charge", killed)
		}
		got := first()
		if got.status != 201 || got.replayed {
			t.Fatalf("after the crash: %+v, want the takeover's 201", got)
		}
		statuses := map[int]bool{}
		for _, r := range got.retries {
			statuses[r.StatusCode] = true
		}
		if !statuses[500] || !statuses[409] {
			t.Fatalf("retries %+v: want one after the killed invocation's 500 and one after a 409 while its lease ran", got.retries)
		}
		st.oneCharge(t, before, key, visa(500), got)
	})
}

func visa(amount int) string {
	b, _ := json.Marshal(map[string]any{"amount": amount, "currency": "usd", "payment_method": provider.CardVisa})
	return string(b)
}

func newKey() string { return "client-" + strings.ToLower(rand.Text()) }

type stackClient struct {
	s     *devstack.Stack
	token string
}

// call is what one logical operation through the client ended with.
type call struct {
	status   int
	replayed bool
	code     string
	body     string
	attempts int
	retries  []idemclient.Retry
}

func (c *call) want(t *testing.T, status int, replayed bool, attempts int) {
	t.Helper()
	if c.status != status || c.replayed != replayed || c.attempts != attempts {
		t.Fatalf("got %+v, want %d (replayed=%v) after %d attempts", c, status, replayed, attempts)
	}
}

// charge posts body under key to api through a fresh client, over
// connections that are not reused, so that every attempt is the client's
// own (Go's transport resends on a reused connection by itself).
func (st *stackClient) charge(t *testing.T, api, key, body string) *call {
	t.Helper()
	out := &call{}
	var mu sync.Mutex
	base := &http.Transport{DisableKeepAlives: true}
	defer base.CloseIdleConnections()
	c := idemclient.New(func(o *idemclient.Options) {
		o.Base = countingBase(base, func() { mu.Lock(); out.attempts++; mu.Unlock() })
		o.OnRetry = func(r idemclient.Retry) { mu.Lock(); out.retries = append(out.retries, r); mu.Unlock() }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api+"/charges", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+st.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idemclient.HeaderKey, key)
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("%s: %v", key, err)
		return out
	}
	defer resp.Body.Close()
	code := idemclient.ProblemCode(resp) // puts back what it reads
	b, _ := io.ReadAll(resp.Body)
	mu.Lock()
	defer mu.Unlock()
	out.status, out.replayed, out.code, out.body = resp.StatusCode, idemclient.Replayed(resp), code, string(b)
	return out
}

// oneCharge checks that the operation under key made exactly one charge
// at the provider since before, that got holds it, and that got is the
// committed response: the same request again replays it.
// chargeInBackground sends a charge as charge does, in the background, and
// returns a wait for its answer; a test that fails first still waits for it.
func (st *stackClient) chargeInBackground(t *testing.T, key, body string) (wait func() *call) {
	var got *call
	var wg sync.WaitGroup
	wg.Go(func() { got = st.charge(t, st.s.APIURL, key, body) })
	t.Cleanup(wg.Wait)
	return func() *call { wg.Wait(); return got }
}

func (st *stackClient) oneCharge(t *testing.T, before int, key, body string, got *call) {
	t.Helper()
	effects := st.s.Sim.Effects()
	if n := len(effects) - before; n != 1 {
		t.Fatalf("%d charges at the provider, want 1", n)
	}
	var ch struct{ ID string }
	if err := json.Unmarshal([]byte(got.body), &ch); err != nil {
		t.Fatalf("the client's answer %s: %v", got.body, err)
	}
	if ch.ID == "" || ch.ID != effects[len(effects)-1].PaymentIntentID {
		t.Fatalf("the client holds charge %q, the provider made %q", ch.ID, effects[len(effects)-1].PaymentIntentID)
	}
	again := st.charge(t, st.s.APIURL, key, body)
	if again.status != got.status || !again.replayed || again.body != got.body {
		t.Fatalf("the same request again: %+v, want a replay of %+v", again, got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func countingBase(base http.RoundTripper, count func()) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) { count(); return base.RoundTrip(r) })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s", what)
		}
	}
}
