package idemclient

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestProblemCodeReadsBothShapes(t *testing.T) {
	cases := []struct {
		name, contentType, body, want string
	}{
		{"problem details", "application/problem+json", `{"type":"about:blank","title":"Conflict","status":409,"code":"request_in_progress"}`, "request_in_progress"},
		{"problem details with a charset", "application/problem+json; charset=utf-8", `{"status":422,"code":"idempotency_key_reused"}`, "idempotency_key_reused"},
		{"today's error object", "application/json", `{"error":{"code":"provider_busy","message":"m"}}`, "provider_busy"},
		{"no content type", "", `{"error":{"code":"card_declined"}}`, "card_declined"},
		{"API Gateway's own", "application/json", `{"message":"Internal Server Error"}`, ""},
		{"an error that is a string", "application/json", `{"error":"boom"}`, ""},
		{"a code that is not a string", "application/problem+json", `{"code":42}`, ""},
		{"not JSON", "text/plain", `{"code":"x"}`, ""},
		{"broken JSON", "application/json", `{"error":`, ""},
		{"a success body", "application/json", `{"id":"ch_1"}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tc.body))}
			if tc.contentType != "" {
				resp.Header.Set("Content-Type", tc.contentType)
			}
			if got := ProblemCode(resp); got != tc.want {
				t.Fatalf("ProblemCode = %q, want %q", got, tc.want)
			}
			if b, _ := io.ReadAll(resp.Body); string(b) != tc.body {
				t.Fatalf("the body reads %q after ProblemCode, want it whole", b)
			}
		})
	}
	if ProblemCode(nil) != "" || ProblemCode(&http.Response{Body: http.NoBody}) != "" {
		t.Fatal("no body, no code")
	}
}

func TestReplayed(t *testing.T) {
	resp := &http.Response{Header: http.Header{}}
	if Replayed(resp) {
		t.Fatal("a fresh response is not a replay")
	}
	resp.Header.Set(HeaderReplayed, "true")
	if !Replayed(resp) {
		t.Fatal("Idempotent-Replayed: true is a replay")
	}
}
