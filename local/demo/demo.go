// Package demo walks through what idempotency keys guarantee, against a
// running local stack over HTTP: each scenario prints what it sent and what
// came back, and counts the charges the provider made. make demo prints it;
// the end-to-end test asserts it.
package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/idemkeys/idem/local/provider"
)

// Target is the stack to talk to.
type Target struct {
	APIURL, ProviderURL string
	Token               func(sub string) (string, error)
}

// Result is one scenario's outcome.
type Result struct {
	Name        string
	Requests    int
	Charges     int // payment intents the provider created during the scenario
	WantCharges int
	Err         error // a step that did not answer as the scenario expects
}

// OK reports whether the scenario went as it should.
func (r Result) OK() bool { return r.Err == nil && r.Charges == r.WantCharges }

type scenario struct {
	name        string
	wantCharges int
	run         func(ctx context.Context, c *client) error
}

// Run plays every scenario in order and prints to out as it goes, then a
// summary table. It stops early only if the stack cannot be reached.
func Run(ctx context.Context, t Target, out io.Writer) ([]Result, error) {
	token, err := t.Token("demo-" + strings.ToLower(rand.Text()[:8]))
	if err != nil {
		return nil, err
	}
	c := &client{target: t, token: token, out: out, http: &http.Client{}}
	if _, err := c.effects(ctx); err != nil {
		return nil, fmt.Errorf("the provider simulator does not answer at %s (is make run up?): %w", t.ProviderURL, err)
	}
	var results []Result
	for i, s := range scenarios {
		fmt.Fprintf(out, "\n%d. %s\n", i+1, s.name)
		before, err := c.effects(ctx)
		if err != nil {
			return results, err
		}
		c.requests = 0
		runErr := s.run(ctx, c)
		after, err := c.effects(ctx)
		if err != nil {
			return results, err
		}
		r := Result{Name: s.name, Requests: c.requests, Charges: after - before, WantCharges: s.wantCharges, Err: runErr}
		verdict := "✔"
		if !r.OK() {
			verdict = "✘"
			if r.Err != nil {
				fmt.Fprintf(out, "   ✘ %v\n", r.Err)
			}
		}
		fmt.Fprintf(out, "   %s %d request(s), %d charge(s) at the provider (want %d)\n", verdict, r.Requests, r.Charges, r.WantCharges)
		results = append(results, r)
	}
	summary(out, results)
	return results, nil
}

func summary(out io.Writer, results []Result) {
	fmt.Fprintf(out, "\n%-58s %8s %8s %6s\n", "scenario", "requests", "charges", "")
	fmt.Fprintln(out, strings.Repeat("-", 90))
	requests, charges := 0, 0
	for _, r := range results {
		mark := "ok"
		if !r.OK() {
			mark = "FAILED"
		}
		fmt.Fprintf(out, "%-64s %8d %8d %6s\n", r.Name, r.Requests, r.Charges, mark)
		requests += r.Requests
		charges += r.Charges
	}
	fmt.Fprintln(out, strings.Repeat("-", 90))
	fmt.Fprintf(out, "%-64s %8d %8d\n", "total", requests, charges)
}

const visa = `{"amount":1050,"currency":"usd","payment_method":"pm_card_visa","description":"two teas"}`

var scenarios = []scenario{
	{"a charge, then the same request again (a replay)", 1, func(ctx context.Context, c *client) error {
		key := newKey()
		first, err := c.post(ctx, "/charges", key, visa, 0)
		if err != nil {
			return err
		}
		again, err := c.post(ctx, "/charges", key, visa, 0)
		if err != nil {
			return err
		}
		return all(first.want(201, false), again.want(201, true), same(first, again))
	}},
	{"the same key with another amount (422)", 1, func(ctx context.Context, c *client) error {
		key := newKey()
		first, err := c.post(ctx, "/charges", key, visa, 0)
		if err != nil {
			return err
		}
		other, err := c.post(ctx, "/charges", key, strings.Replace(visa, "1050", "9900", 1), 0)
		if err != nil {
			return err
		}
		return all(first.want(201, false), other.want(422, false))
	}},
	{"a double click: two requests at once, one charge", 1, func(ctx context.Context, c *client) error {
		key := newKey()
		var wg sync.WaitGroup
		answers := make([]*answer, 2)
		errs := make([]error, 2)
		for i := range answers {
			wg.Add(1)
			go func() { defer wg.Done(); answers[i], errs[i] = c.post(ctx, "/charges", key, visa, 0) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		for _, a := range answers {
			if a.status != 201 && a.status != 409 {
				return fmt.Errorf("got %d, want 201 or 409 (in progress)", a.status)
			}
		}
		final, err := c.post(ctx, "/charges", key, visa, 0)
		if err != nil {
			return err
		}
		return final.want(201, true)
	}},
	{"a retry after a timeout whose first attempt succeeded", 1, func(ctx context.Context, c *client) error {
		// The provider takes 1.5s; the client gives up after 0.5s, but the
		// function carries on and commits.
		if err := c.fault(ctx, provider.Fault{Kind: provider.Delay, Delay: 1500 * time.Millisecond}); err != nil {
			return err
		}
		key := newKey()
		if _, err := c.post(ctx, "/charges", key, visa, 500*time.Millisecond); err == nil {
			return errors.New("the first attempt was meant to time out at the client")
		}
		final, err := c.retryUntilDone(ctx, "/charges", key, visa)
		if err != nil {
			return err
		}
		return final.want(201, true)
	}},
	{"a declined card: 402, stored and replayed", 1, func(ctx context.Context, c *client) error {
		key := newKey()
		body := `{"amount":2500,"currency":"eur","payment_method":"` + provider.CardDeclined + `"}`
		first, err := c.post(ctx, "/charges", key, body, 0)
		if err != nil {
			return err
		}
		again, err := c.post(ctx, "/charges", key, body, 0)
		if err != nil {
			return err
		}
		return all(first.want(402, false), again.want(402, true), same(first, again))
	}},
	{"a crash after the provider call, then a takeover", 1, func(ctx context.Context, c *client) error {
		// The provider charges, then holds its answer; meanwhile the
		// function's process is killed. Its lease runs out, and the retry
		// takes over: the provider recognises the downstream key.
		if err := c.fault(ctx, provider.Fault{Kind: provider.HangAfterEffect, Delay: 30 * time.Second}); err != nil {
			return err
		}
		key := newKey()
		before, err := c.effects(ctx)
		if err != nil {
			return err
		}
		go c.post(context.WithoutCancel(ctx), "/charges", key, visa, 2*time.Second)
		if err := c.waitEffects(ctx, before+1); err != nil {
			return err
		}
		if err := c.crash(ctx); err != nil {
			return err
		}
		busy, err := c.post(ctx, "/charges", key, visa, 0)
		if err != nil {
			return err
		}
		if err := busy.want(409, false); err != nil {
			return fmt.Errorf("right after the crash: %w", err)
		}
		final, err := c.retryUntilDone(ctx, "/charges", key, visa)
		if err != nil {
			return err
		}
		return final.want(201, false)
	}},
	{"natural idempotency: PUT /orders/{id} with a client-chosen id", 0, func(ctx context.Context, c *client) error {
		path := "/orders/ord-" + strings.ToLower(rand.Text()[:8])
		order := `{"items":[{"sku":"tea","quantity":2}]}`
		first, err := c.send(ctx, http.MethodPut, path, "", order, 0)
		if err != nil {
			return err
		}
		same, err := c.send(ctx, http.MethodPut, path, "", order, 0)
		if err != nil {
			return err
		}
		other, err := c.send(ctx, http.MethodPut, path, "", `{"items":[{"sku":"coffee","quantity":1}]}`, 0)
		if err != nil {
			return err
		}
		return all(first.want(201, false), same.want(200, false), other.want(409, false))
	}},
}

type client struct {
	target   Target
	token    string
	out      io.Writer
	http     *http.Client
	mu       sync.Mutex
	requests int
}

type answer struct {
	status   int
	replayed bool
	body     string
}

func (a *answer) want(status int, replayed bool) error {
	if a.status != status || a.replayed != replayed {
		return fmt.Errorf("got %d (replayed=%v), want %d (replayed=%v): %s", a.status, a.replayed, status, replayed, a.body)
	}
	return nil
}

func same(a, b *answer) error {
	if a.body != b.body {
		return fmt.Errorf("the replay's body differs:\n   %s\n   %s", a.body, b.body)
	}
	return nil
}

func all(errs ...error) error { return errors.Join(errs...) }

func newKey() string { return "demo-" + strings.ToLower(rand.Text()) }

func (c *client) post(ctx context.Context, path, key, body string, timeout time.Duration) (*answer, error) {
	return c.send(ctx, http.MethodPost, path, key, body, timeout)
}

// send makes one request, printing it and its answer. A timeout of 0 means
// the default of 15s.
func (c *client) send(ctx context.Context, method, path, key, body string, timeout time.Duration) (*answer, error) {
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.target.APIURL+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	shown := ""
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
		shown = " Idempotency-Key: " + key[:13] + "…"
	}
	c.mu.Lock()
	c.requests++
	c.mu.Unlock()
	c.printf("   → %s %s%s %s", method, path, shown, body)
	resp, err := c.http.Do(req)
	if err != nil {
		c.printf("   ← (no answer: %v)", errors.Unwrap(err))
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := &answer{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true", body: string(b)}
	extra := ""
	if a.replayed {
		extra = " Idempotent-Replayed: true"
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		extra += " Retry-After: " + ra
	}
	c.printf("   ← %d%s %s", a.status, extra, a.body)
	return a, nil
}

// retryUntilDone retries as a client should: after 409, wait Retry-After
// seconds and send the same request again, for up to 20s.
func (c *client) retryUntilDone(ctx context.Context, path, key, body string) (*answer, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, err := c.post(ctx, path, key, body, 0)
		if err != nil {
			return nil, err
		}
		if a.status != 409 || time.Now().After(deadline) {
			return a, nil
		}
		time.Sleep(time.Second)
	}
}

func (c *client) printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	fmt.Fprintln(c.out, line)
}

func (c *client) effects(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.target.ProviderURL+"/_sim/effects", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var effects []provider.Effect
	if err := json.NewDecoder(resp.Body).Decode(&effects); err != nil {
		return 0, err
	}
	return len(effects), nil
}

func (c *client) waitEffects(ctx context.Context, n int) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, err := c.effects(ctx); err != nil || got >= n {
			return err
		}
	}
	return errors.New("the provider never charged")
}

func (c *client) fault(ctx context.Context, f provider.Fault) error {
	b, _ := json.Marshal(f)
	c.printf("   ⚙ provider fault: %s", b)
	return c.admin(ctx, c.target.ProviderURL+"/_sim/faults", b)
}

func (c *client) crash(ctx context.Context) error {
	c.printf("   ⚙ kill -9 the function's process mid-request")
	return c.admin(ctx, c.target.APIURL+"/_local/crash", nil)
}

func (c *client) admin(ctx context.Context, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	return nil
}
