package main

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/idemkeys/idem/local/provider"
	"github.com/idemkeys/idem/pkg/idem"
)

// syncBuffer is a log sink safe for the handler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogsCarryNoBodyKeyOrCardField runs every kind of outcome with the
// logger the function uses in Lambda (JSON, at info) and checks that no log
// line holds the key, the body or any of its fields.
func TestLogsCarryNoBodyKeyOrCardField(t *testing.T) {
	f := newFixture(t)
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	store, err := idem.New(f.raw, f.tables[0], func(o *idem.Options) { o.Logger = log })
	if err != nil {
		t.Fatal(err)
	}
	f.server.store, f.server.log = store, log
	f.Handle = f.server.routes()

	const key = "key-SECRET-7f3a9c"
	secrets := []string{key, "desc-SECRET-4411", "meta-SECRET-9090", "pm_card_visa", provider.CardDeclined, "4242424242424242"}
	body := `{"amount":1234,"currency":"usd","payment_method":"pm_card_visa","description":"desc-SECRET-4411","metadata":{"note":"meta-SECRET-9090"}}`
	f.call("POST", "/charges", "alice", key, body)                                         // executed
	f.call("POST", "/charges", "alice", key, body)                                         // replayed
	f.call("POST", "/charges", "alice", key, strings.Replace(body, "1234", "999", 1))      // 422
	f.call("POST", "/charges", "alice", key+"-card", `{"card_number":"4242424242424242"}`) // refused
	f.call("POST", "/charges", "alice", key+"-d", strings.Replace(body, "pm_card_visa", provider.CardDeclined, 1))
	f.sim.Inject(provider.Fault{Kind: provider.FailBeforeEffect})
	f.call("POST", "/charges", "alice", key+"-f", body) // released after a provider failure

	out := logs.String()
	if !strings.Contains(out, `"outcome":"executed"`) || !strings.Contains(out, `"outcome":"replayed"`) || !strings.Contains(out, `"key_hash"`) {
		t.Fatalf("the outcomes were not logged, so the test proves nothing:\n%s", out)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("the logs contain %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, `"amount"`) || strings.Contains(out, `"body"`) {
		t.Errorf("the logs contain a body field:\n%s", out)
	}
}
