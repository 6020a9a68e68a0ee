package devstack_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idemtest/faultproxy"
)

// TestCrashPoints kills the charge function's process (SIGKILL, under the
// Runtime Interface Emulator) at each step of a charge, then retries after
// the lease: every case must end with one charge at the provider, one charge
// record, and a 201.
func TestCrashPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end, a function killed at each crash point on the whole local stack: make test runs it")
	}
	s := startStack(t, "crash-", devstack.Options{Lease: "2s", FaultProxy: true})
	token := tokenFor(t, s, "crash-tester")
	db := dynamotest.Client(t)

	cases := []struct {
		name  string
		fault func() // holds the function at the step where it is killed
		// reached: true once the function is at that step
		reached func(effectsBefore int) bool
	}{
		{"after the claim, before the provider's effect",
			func() { s.Sim.Inject(provider.Fault{Kind: provider.Delay, Delay: 30 * time.Second}) },
			func(before int) bool { return s.Sim.Pending() > 0 }},
		{"after the provider's effect, before the commit",
			func() { s.Sim.Inject(provider.Fault{Kind: provider.HangAfterEffect, Delay: 30 * time.Second}) },
			func(before int) bool { return len(s.Sim.Effects()) > before }},
		{"during the commit transaction",
			func() {
				s.Faults.Inject(faultproxy.Fault{Op: "TransactWriteItems", Kind: faultproxy.Latency, Delay: 3 * time.Second})
			},
			func(before int) bool { return s.Faults.Injected(faultproxy.Latency) > 0 }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "crash-" + strings.ToLower(rand.Text())
			body := `{"amount":` + strconv.Itoa(i+1) + `00,"currency":"usd","payment_method":"pm_card_visa"}`
			before := len(s.Sim.Effects())
			tc.fault()
			go post(s.APIURL, token, key, body, 2*time.Second) // the client gives up; the function is killed
			deadline := time.Now().Add(10 * time.Second)
			for !tc.reached(before) {
				if time.Now().After(deadline) {
					t.Fatal("the function never reached the step")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if killed := s.API.Crash(); killed != 1 {
				t.Fatalf("killed %d function processes, want the one running the charge", killed)
			}
			var status int
			var got string
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
				if status, got = post(s.APIURL, token, key, body, 10*time.Second); status != 409 && status != 0 {
					break
				}
			}
			if status != 201 {
				t.Fatalf("after the crash and the lease: %d %s, want 201", status, got)
			}
			if n := len(s.Sim.Effects()) - before; n != 1 {
				t.Fatalf("%d charges at the provider, want 1", n)
			}
			out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.Tables["ChargesTable"]), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if int(out.Count) != i+1 {
				t.Fatalf("%d charge records after %d cases, want one per case", out.Count, i+1)
			}
		})
	}
}

func post(api, token, key, body string, timeout time.Duration) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api+"/charges", bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
