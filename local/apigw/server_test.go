package apigw_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/contract"
	"github.com/idemkeys/idem/local/devstack"
	"github.com/idemkeys/idem/local/rie"
	"github.com/idemkeys/idem/local/template"
)

func TestAuthorizerRefusesBadTokens(t *testing.T) {
	auth := &apigw.Authorizer{Secret: []byte("local-secret-0123456789abcdef0123"), Issuer: "https://issuer.test", Audience: "idem-local"}
	good, err := auth.Token("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(secret string, claims jwt.MapClaims, method jwt.SigningMethod) string {
		s, err := jwt.NewWithClaims(method, claims).SignedString([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	valid := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "alice", "iss": auth.Issuer, "aud": auth.Audience, "exp": time.Now().Add(time.Hour).Unix()}
	}
	with := func(k string, v any) jwt.MapClaims { c := valid(); c[k] = v; return c }
	without := func(k string) jwt.MapClaims { c := valid(); delete(c, k); return c }
	cases := map[string]string{
		"missing":        "",
		"not bearer":     "Basic " + good,
		"malformed":      "Bearer not.a.jwt",
		"wrongly signed": "Bearer " + sign("another-secret-0123456789abcdef", valid(), jwt.SigningMethodHS256),
		"expired":        "Bearer " + sign(string(auth.Secret), with("exp", time.Now().Add(-time.Minute).Unix()), jwt.SigningMethodHS256),
		"not yet valid":  "Bearer " + sign(string(auth.Secret), with("nbf", time.Now().Add(time.Minute).Unix()), jwt.SigningMethodHS256),
		"issued later":   "Bearer " + sign(string(auth.Secret), with("iat", time.Now().Add(time.Minute).Unix()), jwt.SigningMethodHS256),
		"no issuer":      "Bearer " + sign(string(auth.Secret), without("iss"), jwt.SigningMethodHS256),
		"no audience":    "Bearer " + sign(string(auth.Secret), without("aud"), jwt.SigningMethodHS256),
		"no expiry":      "Bearer " + sign(string(auth.Secret), without("exp"), jwt.SigningMethodHS256),
		"other issuer":   "Bearer " + sign(string(auth.Secret), with("iss", "https://evil.test"), jwt.SigningMethodHS256),
		"other audience": "Bearer " + sign(string(auth.Secret), with("aud", "someone-else"), jwt.SigningMethodHS256),
		"alg none": "Bearer " + func() string {
			s, _ := jwt.NewWithClaims(jwt.SigningMethodNone, valid()).SignedString(jwt.UnsafeAllowNoneSignatureType)
			return s
		}(),
	}
	for name, header := range cases {
		if claims, err := auth.Verify(header); err == nil {
			t.Errorf("%s: accepted, claims %v", name, claims)
		}
	}
	claims, err := auth.Verify("Bearer " + good)
	if err != nil || claims["sub"] != "alice" {
		t.Fatalf("a good token: %v, %v", claims, err)
	}

	// Through the server: refused with API Gateway's 401 before any function runs.
	srv, err := apigw.New("/nonexistent-emulator", []apigw.Function{{Def: &template.Function{LogicalID: "F", Routes: []template.Route{{Method: "POST", Path: "/charges"}}}}}, auth, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, header := range cases {
		r := httptest.NewRequest(http.MethodPost, "/charges", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		// A refused token is told why; a request without one is not.
		challenged := strings.HasPrefix(w.Header().Get("www-authenticate"), `Bearer scope="" error="invalid_token" error_description="`)
		if w.Code != http.StatusUnauthorized || w.Body.String() != `{"message":"Unauthorized"}` || challenged != (header != "") {
			t.Errorf("%s: %d %s, www-authenticate %q; want 401", name, w.Code, w.Body, w.Header().Get("www-authenticate"))
		}
		// And openapi.yaml describes it as it is sent.
		if err := contract.Check(contract.Exchange{Request: r, Response: w.Result(), ResponseBody: w.Body.Bytes()}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A request whose event is over Lambda's 6 MB limit on a synchronous
// invocation's payload never reaches the function: API Gateway answers 413
// (Lambda quotas, "Invocation payload (request and response)"; the 413
// "Request Entity Too Large" of http-api-monitor.html). One under it does.
func TestRequestOverLambdasInvokeLimitIs413(t *testing.T) {
	auth := testAuthorizer()
	url := echoAPI(t, auth)
	cases := []struct {
		name, contentType string
		size, status      int
		body              string
	}{
		{"5 MB of JSON", "application/json", 5 << 20, 200, strconv.Itoa(5 << 20)},
		{"7 MB of JSON", "application/json", 7 << 20, 413, `{"message":"Request Entity Too Large"}`},
		// 4.6 MB in base64 is over 6 MB.
		{"4.6 MB of bytes", "application/octet-stream", 4<<20 + 600<<10, 413, `{"message":"Request Entity Too Large"}`},
		{"11 MB, over API Gateway's own limit", "application/json", 11 << 20, 413, `{"message":"Request Entity Too Large"}`},
	}
	for _, c := range cases {
		status, _, body := call(t, auth, request{"POST", url + "/size", c.contentType, `"` + strings.Repeat("a", c.size-2) + `"`})
		if status != c.status || body != c.body {
			t.Errorf("%s: %d %.80s; want %d %s", c.name, status, body, c.status, c.body)
		}
	}
}

// A Cognito user pool's access token (client_id, no aud) gets through the
// authorizer that make run and make demo build (devstack.AuthorizerFromVars),
// and its claims reach the function with what API Gateway adds.
func TestCognitoAccessTokenAgainstMakeRunsAuthorizer(t *testing.T) {
	auth, err := devstack.AuthorizerFromVars(map[string]string{devstack.LocalVar + "JWT_SECRET": hex.EncodeToString([]byte(testSecret))})
	if err != nil {
		t.Fatal(err)
	}
	url := echoAPI(t, auth)
	tok, err := auth.AccessToken("user-cognito-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequest("POST", url+"/event", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", tok) // the token alone, as API Gateway accepts it
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.NewDecoder(resp.Body).Decode(&ev); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d, %v", resp.StatusCode, err)
	}
	claims := ev.RequestContext.Authorizer.JWT.Claims
	if claims["sub"] != "user-cognito-1" || claims["client_id"] != devstack.Audience || claims["aud"] != "" || claims["iat"] == "" || claims["exp"] == "" {
		t.Errorf("claims %v", claims)
	}
	if ev.Headers["host"] != r.URL.Host || ev.Headers["x-forwarded-port"] != r.URL.Port() || ev.Body != `{"a":1}` || ev.IsBase64Encoded {
		t.Errorf("headers %v, body %q (base64 %v)", ev.Headers, ev.Body, ev.IsBase64Encoded)
	}
}

// An invocation that fails for want of Lambda, not for the function's own
// answer, is a transient failure, as a client of API Gateway and Lambda
// meets it: 503 Service Unavailable with Retry-After, never a 500 that a
// client reads as the function's error. A function that ran past its
// timeout (here 1 s), which the emulator reports as a bare string, and an
// execution environment that could not start are such failures; the next
// invocation after a timeout runs in a fresh environment and answers.
func TestAnInvocationThatTimesOutOrCannotStartIs503(t *testing.T) {
	auth := testAuthorizer()
	root, err := template.ProjectDir()
	if err != nil {
		t.Fatal(err)
	}
	emulator, err := rie.Binary(root)
	if err != nil {
		t.Fatal(err)
	}
	url := serveEcho(t, auth, emulator, 1)
	check := func(what string, status int, h http.Header, body string) {
		t.Helper()
		if status != 503 || h.Get("Retry-After") == "" || body != `{"message":"Service Unavailable"}` {
			t.Errorf("%s: %d Retry-After %q %s; want 503, Retry-After and API Gateway's message", what, status, h.Get("Retry-After"), body)
		}
	}
	status, h, body := call(t, auth, request{"POST", url + "/sleep", "text/plain", "3000"})
	check("a function past its timeout", status, h, body)
	if status, _, body := call(t, auth, request{"POST", url + "/sleep", "text/plain", "0"}); status != 200 || body != "slept" {
		t.Errorf("the invocation after a timeout: %d %s, want 200", status, body)
	}
	broken := serveEcho(t, auth, filepath.Join(t.TempDir(), "no-emulator"), 10)
	status, h, body = call(t, auth, request{"POST", broken + "/sleep", "text/plain", "0"})
	check("an environment that cannot start", status, h, body)
}
