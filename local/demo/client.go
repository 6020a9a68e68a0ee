package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/idemkeys/idem/local/contract"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idemclient"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// client talks to the stack. Requests to the API go through pkg/idemclient,
// which does every retry; its base transport prints and counts each attempt.
type client struct {
	target   Target
	token    string
	out      io.Writer
	http     *http.Client      // for the simulator's and the stack's own endpoints
	dropURL  string            // the API behind a proxy that can drop an answer
	drops    *faultproxy.Proxy // that proxy's faults
	mu       sync.Mutex
	requests int
	retries  []idemclient.Retry
	breaches []error // answers openapi.yaml does not allow
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

// id is the "id" of the answer's JSON body.
func (a *answer) id() string {
	var v struct{ ID string }
	_ = json.Unmarshal([]byte(a.body), &v) // an answer that is not a charge names none: "", which the check of the provider's charge reports
	return v.ID
}

func same(a, b *answer) error {
	if a.body != b.body {
		return fmt.Errorf("the replay's body differs:\n   %s\n   %s", a.body, b.body)
	}
	return nil
}

func all(errs ...error) error { return errors.Join(errs...) }

// idem is a client for the API, with the demo's printing base transport.
func (c *client) idem(optFns ...func(*idemclient.Options)) *idemclient.Client {
	base := c.http.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	return idemclient.New(append([]func(*idemclient.Options){func(o *idemclient.Options) {
		o.Base = &printer{c: c, base: base}
		o.OnRetry = c.onRetry
	}}, optFns...)...)
}

func (c *client) post(ctx context.Context, path, key, body string) (*answer, error) {
	return c.call(ctx, c.idem(), request{http.MethodPost, c.target.APIURL + path, key, body})
}

// request is one logical operation: key "" sends no Idempotency-Key.
type request struct {
	method, url, key, body string
}

// call is r through ic, within 30s.
func (c *client) call(ctx context.Context, ic *idemclient.Client, r request) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, strings.NewReader(r.body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	if r.key != "" {
		req.Header.Set(idemclient.HeaderKey, r.key)
	}
	resp, err := ic.Do(req)
	if err != nil {
		c.printf("   ✘ %v", err)
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // what was read is kept; a failed close loses nothing of it
	b, err := io.ReadAll(resp.Body)
	return &answer{status: resp.StatusCode, replayed: idemclient.Replayed(resp), body: string(b)}, err
}

func (c *client) onRetry(r idemclient.Retry) {
	why := fmt.Sprintf("%d %s", r.StatusCode, r.Code)
	if r.StatusCode == 0 {
		why = "no answer"
	}
	c.mu.Lock()
	c.retries = append(c.retries, r)
	c.mu.Unlock()
	c.printf("   ↻ %s: the client sends it again in %v, same key", strings.TrimSpace(why), r.Wait.Round(10*time.Millisecond))
}

// retried returns the retries of the scenario so far.
func (c *client) retried() []idemclient.Retry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]idemclient.Retry(nil), c.retries...)
}

// printer prints and counts each attempt that the client sends.
type printer struct {
	c    *client
	base http.RoundTripper
}

func (p *printer) RoundTrip(r *http.Request) (*http.Response, error) {
	c := p.c
	c.mu.Lock()
	c.requests++
	c.mu.Unlock()
	shown, body := "", ""
	if k := r.Header.Get(idemclient.HeaderKey); k != "" {
		shown = " Idempotency-Key: " + k[:min(13, len(k))] + "…"
	}
	if r.GetBody != nil {
		if rc, err := r.GetBody(); err == nil {
			b, _ := io.ReadAll(rc)
			body = string(b)
		}
	}
	c.printf("   → %s %s%s %s", r.Method, r.URL.Path, shown, body)
	resp, err := p.base.RoundTrip(r)
	if err != nil {
		c.printf("   ← (no answer: %v)", err)
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close() // what was read is kept; a failed close loses nothing of it
	if err != nil {
		c.printf("   ← %d, then the connection failed: %v", resp.StatusCode, err)
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	extra := ""
	if idemclient.Replayed(resp) {
		extra = " Idempotent-Replayed: true"
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		extra += " Retry-After: " + ra
	}
	c.printf("   ← %d%s %s", resp.StatusCode, extra, b)
	if err := contract.Check(contract.Exchange{Request: r, RequestBody: []byte(body), Response: resp, ResponseBody: b}); err != nil {
		c.printf("   ✘ %v", err)
		c.mu.Lock()
		c.breaches = append(c.breaches, err)
		c.mu.Unlock()
	}
	return resp, nil
}

// breached is every answer of the scenario so far that openapi.yaml does
// not allow, or nil.
func (c *client) breached() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.breaches...)
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

// effects are the charges the provider made so far.
func (c *client) effects(ctx context.Context) ([]provider.Effect, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.target.ProviderURL+"/_sim/effects", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // what was read is kept; a failed close loses nothing of it
	var effects []provider.Effect
	if err := json.NewDecoder(resp.Body).Decode(&effects); err != nil {
		return nil, err
	}
	return effects, nil
}

func (c *client) waitEffects(ctx context.Context, n int) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, err := c.effects(ctx); err != nil || len(got) >= n {
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
	_ = resp.Body.Close() // only the status is wanted
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	return nil
}
