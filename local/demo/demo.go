// Package demo walks through what idempotency keys guarantee, against a
// running local stack over HTTP: each scenario prints what it sent and what
// came back, and counts the charges the provider made. Requests go through
// pkg/idemclient, which does every retry on its own; the demo prints each
// attempt. make demo prints it; the end-to-end test asserts it.
package demo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idemclient"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
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
	drops, stop, err := startDropProxy(t.APIURL)
	if err != nil {
		return nil, err
	}
	defer stop()
	c.dropURL, c.drops = drops.url, drops.proxy
	var results []Result
	for i, s := range scenarios {
		fmt.Fprintf(out, "\n%d. %s\n", i+1, s.name)
		before, err := c.effects(ctx)
		if err != nil {
			return results, err
		}
		c.mu.Lock()
		c.requests, c.retries, c.breaches = 0, nil, nil
		c.mu.Unlock()
		runErr := errors.Join(s.run(ctx, c), c.breached())
		after, err := c.effects(ctx)
		if err != nil {
			return results, err
		}
		r := Result{Name: s.name, Requests: c.requests, Charges: len(after) - len(before), WantCharges: s.wantCharges, Err: runErr}
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
	fmt.Fprintf(out, "\n%-64s %8s %8s\n", "scenario", "requests", "charges")
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
		return replayed(ctx, c, visa, 201)
	}},
	{"the same key with another amount (422)", 1, func(ctx context.Context, c *client) error {
		key := newKey()
		first, err := c.post(ctx, "/charges", key, visa)
		if err != nil {
			return err
		}
		other, err := c.post(ctx, "/charges", key, strings.Replace(visa, "1050", "9900", 1))
		if err != nil {
			return err
		}
		return all(first.want(201, false), other.want(422, false), noRetries(c))
	}},
	{"a double click: two requests at once, one charge", 1, func(ctx context.Context, c *client) error {
		// The provider takes 1s, so the click that loses the race finds the
		// other in progress (409): its client waits as told, and gets the
		// replay.
		if err := c.fault(ctx, provider.Fault{Kind: provider.Delay, Delay: time.Second}); err != nil {
			return err
		}
		key := newKey()
		var wg sync.WaitGroup
		answers := make([]*answer, 2)
		errs := make([]error, 2)
		for i := range answers {
			wg.Go(func() { answers[i], errs[i] = c.post(ctx, "/charges", key, visa) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		fresh, replay := answers[0], answers[1]
		if fresh.replayed {
			fresh, replay = replay, fresh
		}
		return all(fresh.want(201, false), replay.want(201, true), same(fresh, replay), retriedOn(c, 409))
	}},
	{"a retry after a timeout whose first attempt succeeded", 1, func(ctx context.Context, c *client) error {
		// The provider takes 1.5s; the client gives each attempt 0.5s. The
		// function carries on after the client's timeout and commits; the
		// client's retries find it in progress, then replay it.
		if err := c.fault(ctx, provider.Fault{Kind: provider.Delay, Delay: 1500 * time.Millisecond}); err != nil {
			return err
		}
		impatient := c.idem(func(o *idemclient.Options) { o.AttemptTimeout = 500 * time.Millisecond })
		final, err := c.call(ctx, impatient, request{http.MethodPost, c.target.APIURL + "/charges", newKey(), visa})
		if err != nil {
			return err
		}
		return all(final.want(201, true), retriedOn(c, 0))
	}},
	{"an answer lost after the commit: the client retries on its own", 1, func(ctx context.Context, c *client) error {
		// A proxy in front of the API forwards the request, lets the charge
		// commit, and drops the connection instead of answering.
		c.printf("   ⚙ proxy in front of the API: the next answer is dropped after the commit")
		c.drops.Inject(faultproxy.Fault{Kind: faultproxy.CommitThenDrop})
		before, err := c.effects(ctx)
		if err != nil {
			return err
		}
		final, err := c.call(ctx, c.idem(), request{http.MethodPost, c.dropURL + "/charges", newKey(), visa})
		if err != nil {
			return err
		}
		if err := all(final.want(201, true), retriedOn(c, 0)); err != nil {
			return err
		}
		return sameCharge(ctx, c, before, final)
	}},
	{"a declined card: 402, stored and replayed", 1, func(ctx context.Context, c *client) error {
		return replayed(ctx, c, `{"amount":2500,"currency":"eur","payment_method":"`+provider.CardDeclined+`"}`, 402)
	}},
	{"a crash after the provider call, then a takeover", 1, func(ctx context.Context, c *client) error {
		// The provider charges, then holds its answer; meanwhile the
		// function's process is killed. The client retries: 409 while the
		// dead holder's lease runs, then its retry takes over, and the
		// provider recognises the downstream key.
		if err := c.fault(ctx, provider.Fault{Kind: provider.HangAfterEffect, Delay: 30 * time.Second}); err != nil {
			return err
		}
		before, err := c.effects(ctx)
		if err != nil {
			return err
		}
		var final *answer
		done := make(chan error, 1)
		go func() {
			var err error
			final, err = c.post(ctx, "/charges", newKey(), visa)
			done <- err
		}()
		if err := c.waitEffects(ctx, len(before)+1); err != nil {
			return err
		}
		if err := c.crash(ctx); err != nil {
			return err
		}
		if err := <-done; err != nil {
			return err
		}
		return all(final.want(201, false), retriedOn(c, 409), sameCharge(ctx, c, before, final))
	}},
	{"natural idempotency: PUT /orders/{id} with a client-chosen id", 0, func(ctx context.Context, c *client) error {
		url := c.target.APIURL + "/orders/ord-" + strings.ToLower(rand.Text()[:8])
		order := `{"items":[{"sku":"tea","quantity":2}]}`
		first, err := c.call(ctx, c.idem(), request{http.MethodPut, url, "", order})
		if err != nil {
			return err
		}
		same, err := c.call(ctx, c.idem(), request{http.MethodPut, url, "", order})
		if err != nil {
			return err
		}
		other, err := c.call(ctx, c.idem(), request{http.MethodPut, url, "", `{"items":[{"sku":"coffee","quantity":1}]}`})
		if err != nil {
			return err
		}
		return all(first.want(201, false), same.want(200, false), other.want(409, false))
	}},
}

func newKey() string { return "demo-" + strings.ToLower(rand.Text()) }

// retriedOn checks that the client retried after an answer of status (0:
// no answer at all).
// replayed posts a charge twice under one new key: the first answer is
// status, fresh, and the second the same answer replayed.
func replayed(ctx context.Context, c *client, body string, status int) error {
	key := newKey()
	first, err := c.post(ctx, "/charges", key, body)
	if err != nil {
		return err
	}
	again, err := c.post(ctx, "/charges", key, body)
	if err != nil {
		return err
	}
	return all(first.want(status, false), again.want(status, true), same(first, again))
}

func retriedOn(c *client, status int) error {
	for _, r := range c.retried() {
		if r.StatusCode == status {
			return nil
		}
	}
	return fmt.Errorf("the client never retried after a %d (retries: %+v)", status, c.retried())
}

func noRetries(c *client) error {
	if r := c.retried(); len(r) > 0 {
		return fmt.Errorf("the client retried a refusal: %+v", r)
	}
	return nil
}

// sameCharge checks that the answer is the one charge the provider made
// since before: the original charge's id, not a second charge's.
func sameCharge(ctx context.Context, c *client, before []provider.Effect, a *answer) error {
	after, err := c.effects(ctx)
	if err != nil {
		return err
	}
	if len(after) != len(before)+1 || after[len(after)-1].PaymentIntentID != a.id() {
		return fmt.Errorf("the answer's charge %q is not the provider's one new charge (%d new)", a.id(), len(after)-len(before))
	}
	c.printf("   ✓ the 201 holds %s, the one charge the provider made", a.id())
	return nil
}

// dropProxy is the API behind a faultproxy, which can drop an answer after
// the API has acted on its request.
type dropProxy struct {
	url   string
	proxy *faultproxy.Proxy
}

func startDropProxy(apiURL string) (*dropProxy, func(), error) {
	p, err := faultproxy.New(apiURL)
	if err != nil {
		return nil, nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	// Serve returns ErrServerClosed once stopped, and any other failure shows
	// in the requests sent to it; a Close that fails at shutdown leaves
	// nothing to serve either way.
	go func() { _ = srv.Serve(l) }()
	return &dropProxy{url: "http://" + l.Addr().String(), proxy: p}, func() { _ = srv.Close() }, nil
}
