package apigw

import (
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idemkeys/idem/pkg/httpapi"
)

// Authorizer verifies bearer tokens as the HTTP API's JWT authorizer does:
// signature, issuer, audience, expiry. Locally the tokens are HS256 with a
// secret of make run's; deployed, API Gateway checks the issuer's keys.
type Authorizer struct {
	Secret   []byte
	Issuer   string
	Audience string
}

// Verify returns the token's claims as API Gateway passes them to a
// function: every value a string.
func (a *Authorizer) Verify(header string) (map[string]string, error) {
	raw, ok := stripBearer(header)
	if !ok {
		return nil, errors.New("no bearer token")
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return a.Secret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer(a.Issuer), jwt.WithAudience(a.Audience), jwt.WithExpirationRequired())
	if err != nil {
		return nil, err
	}
	return httpapi.ClaimStrings(claims), nil
}

// Token mints a token for sub, valid for ttl.
func (a *Authorizer) Token(sub string, ttl time.Duration) (string, error) {
	now := time.Now()
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub, "iss": a.Issuer, "aud": a.Audience, "iat": now.Unix(), "exp": now.Add(ttl).Unix(),
	}).SignedString(a.Secret)
}

func stripBearer(h string) (string, bool) {
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return h[len(prefix):], true
}
