package apigw_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/template"
)

const testSecret = "local-secret-0123456789abcdef0123"

func testAuthorizer() *apigw.Authorizer {
	return &apigw.Authorizer{Secret: []byte(testSecret), Issuer: "https://issuer.test", Audience: "idem-local"}
}

// sign signs claims with secret, HS256.
func sign(t *testing.T, secret string, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validClaims are the claims of a token the test authorizer accepts.
func validClaims(auth *apigw.Authorizer) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"sub": "alice", "iss": auth.Issuer, "aud": "idem-local", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// API Gateway checks that iat is before the current time, and any failed
// check denies the request (http-api-jwt-authorizer.html).
func TestAuthorizerRefusesATokenIssuedInTheFuture(t *testing.T) {
	auth := testAuthorizer()
	c := validClaims(auth)
	c["iat"] = time.Now().Add(10 * time.Minute).Unix()
	if claims, err := auth.Verify("Bearer " + sign(t, testSecret, c)); err == nil {
		t.Fatalf("a token issued ten minutes from now: accepted, claims %v", claims)
	}
}

// API Gateway checks aud or, only when aud is absent, client_id against the
// authorizer's audiences (http-api-troubleshooting-jwt.html): a Cognito
// access token carries client_id and no aud.
func TestAuthorizerChecksAudOrElseClientID(t *testing.T) {
	auth := testAuthorizer()
	access := func(clientID any) jwt.MapClaims {
		c := validClaims(auth)
		delete(c, "aud")
		c["token_use"], c["scope"] = "access", "aws.cognito.signin.user.admin"
		if clientID != nil {
			c["client_id"] = clientID
		}
		return c
	}
	both := func(aud, clientID string) jwt.MapClaims {
		c := validClaims(auth)
		c["aud"], c["client_id"] = aud, clientID
		return c
	}
	cases := []struct {
		name   string
		claims jwt.MapClaims
		ok     bool
	}{
		{"a Cognito access token of the client", access("idem-local"), true},
		{"an access token of another client", access("someone-else"), false},
		{"client_id not a string", access([]string{"idem-local"}), false},
		{"neither aud nor client_id", access(nil), false},
		{"aud in a list", func() jwt.MapClaims { c := validClaims(auth); c["aud"] = []string{"other", "idem-local"}; return c }(), true},
		{"aud wins over client_id: aud wrong", both("someone-else", "idem-local"), false},
		{"aud wins over client_id: aud right", both("idem-local", "someone-else"), true},
	}
	for _, c := range cases {
		claims, err := auth.Verify("Bearer " + sign(t, testSecret, c.claims))
		if (err == nil) != c.ok {
			t.Errorf("%s: claims %v, error %v; want accepted %v", c.name, claims, err, c.ok)
		}
	}
}

// The audiences are a list, as the template's JwtAudience is: aud, or
// client_id, may be any of them.
func TestAuthorizerAcceptsEachOfItsAudiences(t *testing.T) {
	auth := &apigw.Authorizer{Secret: []byte(testSecret), Issuer: "https://issuer.test", Audiences: []string{"web-client", "idem-local"}}
	for _, aud := range auth.Audiences {
		for _, claim := range []string{"aud", "client_id"} {
			c := validClaims(auth)
			delete(c, "aud")
			c[claim] = aud
			if claims, err := auth.Verify("Bearer " + sign(t, testSecret, c)); err != nil || claims[claim] != aud {
				t.Errorf("%s %s: %v, %v; want accepted", claim, aud, claims, err)
			}
		}
	}
	for _, mint := range []func(string, time.Duration) (string, error){auth.Token, auth.AccessToken} {
		tok, err := mint("alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if claims, err := auth.Verify(tok); err != nil || claims["sub"] != "alice" {
			t.Errorf("a token the authorizer minted: %v, %v", claims, err)
		}
	}
}

// The identity source may hold the token alone or prefixed with "Bearer "
// (http-api-jwt-authorizer.html).
func TestAuthorizerTakesTheTokenAloneOrPrefixed(t *testing.T) {
	auth := testAuthorizer()
	tok := sign(t, testSecret, validClaims(auth))
	for _, h := range []string{"Bearer " + tok, "bearer " + tok, tok} {
		if claims, err := auth.Verify(h); err != nil || claims["sub"] != "alice" {
			t.Errorf("Authorization %.12q...: %v, %v; want alice", h, claims, err)
		}
	}
}

// A refused token is answered 401 {"message":"Unauthorized"} with the
// www-authenticate header that says why (http-api-troubleshooting-jwt.html).
func TestRefusedTokenGetsWWWAuthenticate(t *testing.T) {
	auth := testAuthorizer()
	c := validClaims(auth)
	c["aud"] = "someone-else"
	srv, err := apigw.New("/nonexistent-emulator", []apigw.Function{{Def: &template.Function{LogicalID: "F", Routes: []template.Route{{Method: "POST", Path: "/charges"}}}}}, auth, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/charges", nil)
	r.Header.Set("Authorization", "Bearer "+sign(t, testSecret, c))
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	want := `Bearer scope="" error="invalid_token" error_description="the token does not have a valid audience"`
	if w.Code != http.StatusUnauthorized || w.Body.String() != `{"message":"Unauthorized"}` || w.Header().Get("www-authenticate") != want {
		t.Fatalf("%d %s, www-authenticate %q; want 401 with %q", w.Code, w.Body, w.Header().Get("www-authenticate"), want)
	}
}
