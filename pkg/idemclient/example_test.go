package idemclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/idemkeys/idem/pkg/idemclient"
)

// chargeAPI is a toy Idempotency-Key server: it charges once per key and
// replays the stored answer. The first answer under each key is lost on the
// way back: the connection drops after the charge was made.
func chargeAPI() (url string, charges func() int, stop func()) {
	var mu sync.Mutex
	stored := map[string]string{}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		body, replay := stored[key]
		if !replay {
			n++
			body = fmt.Sprintf(`{"id":"ch_%d","amount":1050}`, n)
			stored[key] = body
		}
		mu.Unlock()
		if !replay { // charged; the answer is lost
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, body)
	}))
	return srv.URL, func() int { mu.Lock(); defer mu.Unlock(); return n }, srv.Close
}

// A charge whose first answer is lost: the client sends the same request
// again under the same key and gets the charge that was made, once.
func ExampleClient_Do() {
	api, charges, stop := chargeAPI()
	defer stop()

	c := idemclient.New()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api+"/charges", strings.NewReader(`{"amount":1050,"currency":"usd"}`))
	resp, err := c.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, "replayed:", idemclient.Replayed(resp), string(body))
	fmt.Println("charges made:", charges())
	// Output:
	// 201 replayed: true {"id":"ch_1","amount":1050}
	// charges made: 1
}

// A key that must outlive the process is made and stored by the caller
// before the first send. When the retries end without an answer, the error
// says the outcome is unknown and names the key to ask again with.
func ExampleUnknownOutcomeError() {
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"type":"about:blank","title":"Service Unavailable","status":503,"code":"provider_unavailable"}`)
	}))
	defer busy.Close()

	key := "order-7f3a-payment" // saved with the order before sending
	c := idemclient.New(func(o *idemclient.Options) { o.MaxAttempts, o.MinBackoff = 3, time.Millisecond })
	req, _ := http.NewRequest(http.MethodPost, busy.URL+"/charges", strings.NewReader(`{"amount":1050}`))
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(req)

	var unknown *idemclient.UnknownOutcomeError
	switch {
	case errors.As(err, &unknown):
		fmt.Printf("outcome unknown after %d attempts (last %d %s): retry later with %s\n",
			unknown.Attempts, unknown.StatusCode, unknown.Code, unknown.Key)
	case err == nil:
		resp.Body.Close()
	}
	// Output:
	// outcome unknown after 3 attempts (last 503 provider_unavailable): retry later with order-7f3a-payment
}

// Transport serves any code that takes an http.Client: here a 429 is
// waited out, and the request sent again under the key it was given.
func ExampleNewTransport() {
	var mu sync.Mutex
	keys := map[string]int{}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys[r.Header.Get("Idempotency-Key")]++
		first := keys[r.Header.Get("Idempotency-Key")] == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer api.Close()

	hc := &http.Client{Transport: idemclient.NewTransport(func(o *idemclient.Options) {
		o.AttemptTimeout = 10 * time.Second // each attempt; a context would bound them all
	})}
	resp, err := hc.Post(api.URL+"/orders", "application/json", strings.NewReader(`{"sku":"tea"}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	fmt.Println(resp.StatusCode, "after", keys[idemclient.Key(resp)], "requests under one key")
	// Output:
	// 201 after 2 requests under one key
}
