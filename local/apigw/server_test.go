package apigw_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idemkeys/idem/local/apigw"
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
	}
}
