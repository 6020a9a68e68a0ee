package idem

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of the idempotency record. The table's hash key is AttrPK
// (a string) and its TTL attribute AttrExpiresAt; template.yaml must agree,
// and a test checks that it does.
const (
	AttrPK          = "pk"
	AttrExpiresAt   = "expires_at"
	attrScope       = "scope"
	attrKey         = "key"
	attrFingerprint = "fingerprint"
	attrStatus      = "status"
	attrLeaseToken  = "lease_token"
	attrLeaseUntil  = "lease_until"
	attrResponse    = "response"
	attrAttempts    = "attempts"
	attrCreatedAt   = "created_at"
	attrCompletedAt = "completed_at"
)

// The two states of a record. Absent (or expired) is the third.
const (
	statusInProgress = "IN_PROGRESS"
	statusCompleted  = "COMPLETED"
)

// record is one (scope, key). Times are in the units DynamoDB needs: the TTL
// attribute must be epoch seconds, the lease is compared in milliseconds.
type record struct {
	PK          string          `dynamodbav:"pk"`
	Scope       string          `dynamodbav:"scope"`
	Key         string          `dynamodbav:"key"`
	Fingerprint string          `dynamodbav:"fingerprint"`
	Status      string          `dynamodbav:"status"`
	LeaseToken  string          `dynamodbav:"lease_token"`
	LeaseUntil  int64           `dynamodbav:"lease_until"`
	ExpiresAt   int64           `dynamodbav:"expires_at"`
	Response    *storedResponse `dynamodbav:"response,omitempty"`
	Attempts    int             `dynamodbav:"attempts"`
	CreatedAt   int64           `dynamodbav:"created_at"`
	CompletedAt int64           `dynamodbav:"completed_at,omitempty"`
}

// storedResponse is a Response as the record keeps it: never its cookies
// (Response.Cookies, a Set-Cookie header), which only the first answer
// carries. A session cookie kept for the record's life and sent again with
// every replay would outlive the session's rotation or revocation.
type storedResponse struct {
	StatusCode int          `dynamodbav:"status"`
	Header     storedHeader `dynamodbav:"headers,omitempty"`
	Body       []byte       `dynamodbav:"body,omitempty"`
}

// storedHeader is a response's headers as the record keeps them, so that
// each value reads back byte for byte: a value of valid UTF-8 as a string,
// any other (a Latin-1 filename) as binary, since the SDK writes each
// invalid byte of a string attribute as U+FFFD.
type storedHeader map[string]string

// MarshalDynamoDBAttributeValue is encodeHeader, for attributevalue.
func (h storedHeader) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return &types.AttributeValueMemberM{Value: encodeHeader(h)}, nil
}

// UnmarshalDynamoDBAttributeValue reads the headers back, each value a
// string or binary.
func (h *storedHeader) UnmarshalDynamoDBAttributeValue(av types.AttributeValue) error {
	m, ok := av.(*types.AttributeValueMemberM)
	if !ok {
		return fmt.Errorf("headers: %T, want a map", av)
	}
	*h = make(storedHeader, len(m.Value))
	for name, v := range m.Value {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			(*h)[name] = v.Value
		case *types.AttributeValueMemberB:
			(*h)[name] = string(v.Value)
		default:
			return fmt.Errorf("header %q: %T, want a string or binary", name, v)
		}
	}
	return nil
}

// isSetCookie reports whether a header name is Set-Cookie, in any case.
func isSetCookie(name string) bool { return len(name) == 10 && strings.EqualFold(name, "Set-Cookie") }

// withoutCookies is resp as the record, the cache and every replay have
// it: its header map is resp's own unless resp has a Set-Cookie header,
// which a copy then leaves out.
func withoutCookies(resp Response) Response {
	resp.Cookies = nil
	for name := range resp.Header {
		if isSetCookie(name) {
			resp.Header = maps.Clone(resp.Header)
			maps.DeleteFunc(resp.Header, func(name, _ string) bool { return isSetCookie(name) })
			break
		}
	}
	return resp
}

// withCookiesOf is stored, a response read back from the record, with the
// cookies of sent, the response whose commit put it there: the first
// answer's, which the record does not keep.
func withCookiesOf(stored, sent Response) Response {
	stored.Cookies = sent.Cookies
	for name, value := range sent.Header {
		if isSetCookie(name) {
			stored.Header = maps.Clone(stored.Header)
			if stored.Header == nil {
				stored.Header = map[string]string{}
			}
			stored.Header[name] = value
		}
	}
	return stored
}

func (r *record) expired(now time.Time) bool { return r.ExpiresAt < now.Unix() }

func (r *record) leaseLive(now time.Time) bool { return r.LeaseUntil > now.UnixMilli() }

func (r *record) response() Response {
	if r.Response == nil {
		return Response{}
	}
	return Response{StatusCode: r.Response.StatusCode, Header: r.Response.Header, Body: r.Response.Body}
}

// decodeRecord reads an item that DynamoDB returned. A nil or empty item is
// no record, which is not an error.
func decodeRecord(item map[string]types.AttributeValue) (*record, error) {
	if len(item) == 0 {
		return nil, nil
	}
	var r record
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return nil, fmt.Errorf("idem: decode record: %w", err)
	}
	if r.Response != nil {
		// A record an earlier version stored may hold a Set-Cookie header
		// (its cookies attribute is not decoded at all): never replayed.
		r.Response.Header = withoutCookies(Response{Header: r.Response.Header}).Header
	}
	return &r, nil
}

// item encodes the record by hand, on the hot path of every claim: the same
// attributes attributevalue.MarshalMap writes from the struct tags (a test
// holds the two to each other), at a fraction of its cost. Its values are
// allocated together, and its numbers share one string: most of what an item
// costs is an allocation per value.
func (r *record) item() map[string]types.AttributeValue {
	m := make(map[string]types.AttributeValue, 12)
	v := new(struct {
		s [6]types.AttributeValueMemberS
		n [5]types.AttributeValueMemberN
	})
	for i, a := range [...]struct{ name, value string }{
		{AttrPK, r.PK}, {attrScope, r.Scope}, {attrKey, r.Key},
		{attrFingerprint, r.Fingerprint}, {attrStatus, r.Status}, {attrLeaseToken, r.LeaseToken},
	} {
		v.s[i].Value = a.value
		m[a.name] = &v.s[i]
	}
	numbers(v.n[:], r.LeaseUntil, r.ExpiresAt, int64(r.Attempts), r.CreatedAt, r.CompletedAt)
	m[attrLeaseUntil], m[AttrExpiresAt], m[attrAttempts], m[attrCreatedAt] = &v.n[0], &v.n[1], &v.n[2], &v.n[3]
	if r.CompletedAt != 0 {
		m[attrCompletedAt] = &v.n[4]
	}
	if r.Response != nil {
		m[attrResponse] = encodeResponse(r.response())
	}
	return m
}

// encodeResponse is resp as storedResponse, as attributevalue would encode
// it, its fixed values allocated together: without its cookies, neither
// Response.Cookies nor a Set-Cookie header.
func encodeResponse(resp Response) types.AttributeValue {
	v := new(struct {
		outer, headers types.AttributeValueMemberM
		status         types.AttributeValueMemberN
		body           types.AttributeValueMemberB
	})
	m := make(map[string]types.AttributeValue, 3)
	v.status.Value = strconv.Itoa(resp.StatusCode)
	m["status"] = &v.status
	if h := encodeHeader(resp.Header); len(h) > 0 {
		v.headers.Value = h
		m["headers"] = &v.headers
	}
	if len(resp.Body) > 0 {
		v.body.Value = resp.Body
		m["body"] = &v.body
	}
	v.outer.Value = m
	return &v.outer
}

// encodeHeader is header as the record keeps it (see storedHeader), but
// for a Set-Cookie header, which it leaves out; nil for none. Its string
// values are allocated together.
func encodeHeader(header map[string]string) map[string]types.AttributeValue {
	if len(header) == 0 {
		return nil
	}
	h := make(map[string]types.AttributeValue, len(header))
	values := make([]types.AttributeValueMemberS, 0, len(header))
	for k, s := range header {
		switch {
		case isSetCookie(k):
		case utf8.ValidString(s):
			values = append(values, types.AttributeValueMemberS{Value: s})
			h[k] = &values[len(values)-1]
		default:
			h[k] = &types.AttributeValueMemberB{Value: []byte(s)}
		}
	}
	return h
}

func number(n int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// numbers sets dst[i] to ns[i] in decimal, the strings sharing one
// allocation.
func numbers(dst []types.AttributeValueMemberN, ns ...int64) {
	var buf [8 * 20]byte
	b, ends := buf[:0], [8]int{}
	for i, n := range ns {
		b = strconv.AppendInt(b, n, 10)
		ends[i] = len(b)
	}
	all, from := string(b), 0
	for i := range ns {
		dst[i].Value, from = all[from:ends[i]], ends[i]
	}
}
