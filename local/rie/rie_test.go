package rie_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkeys/idem/local/proc"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
	"github.com/idemkeys/idem/local/template/templatetest"
)

// built builds the template's functions for t and finds the emulator.
func built(t *testing.T) (tpl *template.Template, bin, emulator string) {
	t.Helper()
	tpl, bin = templatetest.Built(t)
	emulator, err := rie.Binary(tpl.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return tpl, bin, emulator
}

// TestStopKillsTheFunctionProcess checks what the crash tests rely on: the
// emulator starts the function in its own process group, and Stop must still
// kill the function, not just the emulator.
func TestStopKillsTheFunctionProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("the functions built, one killed mid-invocation under the Lambda RIE: make test runs it")
	}
	tpl, bin, emulator := built(t)
	fn, err := tpl.Function("OrderFunction")
	if err != nil {
		t.Fatal(err)
	}
	// A DynamoDB that accepts connections and never answers holds the
	// function mid-invocation, as a crash would find it.
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := hold.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	rt, err := rie.Start(context.Background(), emulator, fn.Bootstrap(bin), rie.Options{Env: []string{
		"IDEMPOTENCY_TABLE=t-idem", "ORDERS_TABLE=t-orders", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "DYNAMODB_ENDPOINT=http://" + hold.Addr().String(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	event := `{"routeKey":"POST /orders","rawPath":"/orders","headers":{"idempotency-key":"k"},"body":"{\"items\":[{\"sku\":\"tea\",\"quantity\":1}]}",` +
		`"requestContext":{"http":{"method":"POST"},"authorizer":{"jwt":{"claims":{"sub":"alice"}}}}}`
	go func() { _, _ = rt.Invoke(context.Background(), []byte(event)) }() // the function is stopped mid-call: this call's answer is not what the test checks
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the function never called DynamoDB")
	}
	kids := proc.Children(rt.Pid())
	if len(kids) == 0 {
		t.Fatal("the emulator has no function process")
	}
	// A crash is immediate: the function must not finish its invocation
	// first (it would, given time: its call to DynamoDB times out).
	stopped := time.Now()
	rt.Stop()
	if took := time.Since(stopped); took > 2*time.Second {
		t.Fatalf("Stop took %v: the function ran on after the emulator died", took)
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range kids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("function process %d outlived Stop", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// alive reports whether pid runs (a zombie awaiting its reaper does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(rest) > 0 && rest[0] != "Z"
}
