package apigw

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idemkeys/idem/internal/httpapi"
)

// Authorizer verifies tokens as the HTTP API's JWT authorizer does
// (API Gateway developer guide, "Control access to HTTP APIs with JWT
// authorizers", http-api-jwt-authorizer.html): the token alone or after
// "Bearer ", its signature, iss, aud (or client_id when it has no aud)
// against the audiences, exp, nbf and iat. Where it deliberately differs:
// tokens are HS256 with a secret of make run's, where API Gateway checks
// the issuer's RSA keys from its JWKS URI.
type Authorizer struct {
	Secret []byte
	Issuer string
	// Audiences are the accepted audiences, as the template's JwtAudience
	// lists them (JwtConfiguration.audience).
	Audiences []string
	// Audience is one more accepted audience, for a caller that names one.
	Audience string
}

// errNoToken is Verify's error for a request without a token, which API
// Gateway answers 401 without saying why.
var errNoToken = errors.New("no token")

// Verify returns the token's claims as API Gateway passes them to a
// function: every value a string, null claims left out. Its error says why
// the token was refused, in API Gateway's words where the guide gives them.
func (a *Authorizer) Verify(header string) (map[string]string, error) {
	raw := stripBearer(header)
	if raw == "" {
		return nil, errNoToken
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return a.Secret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer(a.Issuer), jwt.WithExpirationRequired(),
		jwt.WithIssuedAt())
	if err != nil {
		return nil, tokenError(err)
	}
	if !a.audienceOK(claims) {
		return nil, errors.New("the token does not have a valid audience")
	}
	return httpapi.ClaimStrings(claims), nil
}

// audienceOK is API Gateway's audience check: aud when the token has one,
// else client_id, must be one of the audiences. "API Gateway validates
// client_id only if aud is not present. When both aud and client_id are
// present, API Gateway evaluates aud." (http-api-troubleshooting-jwt.html)
func (a *Authorizer) audienceOK(claims jwt.MapClaims) bool {
	accepted := a.audiences()
	if _, ok := claims["aud"]; ok {
		aud, err := claims.GetAudience()
		return err == nil && slices.ContainsFunc(aud, func(s string) bool { return slices.Contains(accepted, s) })
	}
	clientID, ok := claims["client_id"].(string)
	return ok && slices.Contains(accepted, clientID)
}

// audiences are Audience, when set, then Audiences.
func (a *Authorizer) audiences() []string {
	if a.Audience == "" {
		return a.Audiences
	}
	return append([]string{a.Audience}, a.Audiences...)
}

// tokenError is why a token was refused, as API Gateway words it in
// www-authenticate's error_description.
func tokenError(err error) error {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return errors.New("the token has expired")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued), errors.Is(err, jwt.ErrTokenNotValidYet):
		return errors.New("the token is not valid yet")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return errors.New("the token does not have a valid issuer")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return errors.New("the token is missing a required claim")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return errors.New("the token's signature is invalid")
	default:
		return errors.New("the token is malformed")
	}
}

// challenge is the www-authenticate header API Gateway sends with the 401
// of a refused token, err being Verify's: `Bearer scope="" error="invalid_token"
// error_description="the token does not have a valid audience"`
// (http-api-troubleshooting-jwt.html). Only the audience's description is
// the guide's own wording.
func challenge(err error) string {
	desc := strings.NewReplacer(`"`, `'`, `\`, `/`).Replace(err.Error())
	return `Bearer scope="" error="invalid_token" error_description="` + desc + `"`
}

// Token mints an ID-style token for sub, valid for ttl: aud is the first
// audience.
func (a *Authorizer) Token(sub string, ttl time.Duration) (string, error) {
	now := time.Now()
	return a.sign(jwt.MapClaims{
		"sub": sub, "iss": a.Issuer, "aud": a.first(), "iat": now.Unix(), "exp": now.Add(ttl).Unix(),
	})
}

// AccessToken mints a token for sub shaped as a Cognito user pool's access
// token, valid for ttl: no aud, client_id the first audience.
func (a *Authorizer) AccessToken(sub string, ttl time.Duration) (string, error) {
	now := time.Now()
	return a.sign(jwt.MapClaims{
		"sub": sub, "iss": a.Issuer, "client_id": a.first(), "token_use": "access",
		"scope": "aws.cognito.signin.user.admin", "iat": now.Unix(), "exp": now.Add(ttl).Unix(),
	})
}

func (a *Authorizer) sign(claims jwt.MapClaims) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(a.Secret)
}

func (a *Authorizer) first() string {
	if aud := a.audiences(); len(aud) > 0 {
		return aud[0]
	}
	return ""
}

// stripBearer is the token of an Authorization header: the value alone, or
// after "Bearer " in any case.
func stripBearer(h string) string {
	h = strings.TrimSpace(h)
	if scheme, tok, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(tok)
	}
	return h
}
