package idemlambda_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

// seen is what a client sees of an answer: its status, whether it is a
// replay, every Set-Cookie it carries (the cookies field, a header in any
// case, multi-value headers), whether a header is named Set-Cookie at all
// (an empty list is an entry too), and one header that is no cookie.
type seen struct {
	status   int
	replayed bool
	cookies  []string
	named    bool
	kept     string
}

// namesACookie says whether headers or multi has an entry named
// Set-Cookie, empty or not.
func namesACookie(headers map[string]string, multi map[string][]string) bool {
	for name := range headers {
		if strings.EqualFold(name, "Set-Cookie") {
			return true
		}
	}
	for name := range multi {
		if strings.EqualFold(name, "Set-Cookie") {
			return true
		}
	}
	return false
}

func cookiesIn(cookies []string, headers map[string]string, multi map[string][]string) []string {
	out := slices.Clone(cookies)
	for name, v := range headers {
		if strings.EqualFold(name, "Set-Cookie") {
			out = append(out, v)
		}
	}
	for name, vs := range multi {
		if strings.EqualFold(name, "Set-Cookie") {
			out = append(out, vs...)
		}
	}
	slices.Sort(out)
	return out
}

// cookieHandler answers status with cookies both ways a handler sets them.
func cookieHandler[E any](runs *atomic.Int32, status int) idemlambda.Handler[E, struct{}] {
	return func(ctx context.Context, req idemlambda.Request[E, struct{}], tx *idem.Tx) (idem.Response, error) {
		runs.Add(1)
		return idem.Response{
			StatusCode: status,
			Header:     map[string]string{"Set-Cookie": "h=1; HttpOnly", "X-Kept": "yes"},
			Cookies:    []string{"session=s1; HttpOnly"},
			Body:       []byte(`{}`),
		}, nil
	}
}

// TestSetCookieIsNeverReplayedByALambdaDoor: behind every HTTP door of
// idemlambda, the first answer carries the handler's cookies, those of its
// Cookies and of its headers alike (an ALB without multi-value headers has
// room for one, the last of Cookies), and no replay does (from the table,
// and from Options.Cache), for a 2xx and a stored 4xx alike; a replay
// names no Set-Cookie at all, not even with an empty list; a header that
// is not a cookie is replayed.
func TestSetCookieIsNeverReplayedByALambdaDoor(t *testing.T) {
	doors := map[string]func(s idemlambda.Doer, runs *atomic.Int32, status int) func(key string) seen{
		"HTTPAPI": func(s idemlambda.Doer, runs *atomic.Int32, status int) func(string) seen {
			h := idemlambda.HTTPAPI(s, nil, cookieHandler[events.APIGatewayV2HTTPRequest](runs, status))
			return func(key string) seen {
				out, _ := h(context.Background(), testbed.APIRequest("alice", map[string]string{"idempotency-key": key}, `{}`))
				return seen{out.StatusCode, out.Headers[idemlambda.HeaderReplayed] == "true", cookiesIn(out.Cookies, out.Headers, nil), namesACookie(out.Headers, nil), out.Headers["X-Kept"]}
			}
		},
		"FunctionURL": func(s idemlambda.Doer, runs *atomic.Int32, status int) func(string) seen {
			h := idemlambda.FunctionURL(s, nil, cookieHandler[events.LambdaFunctionURLRequest](runs, status))
			return func(key string) seen {
				out, _ := h(context.Background(), testbed.FunctionURLRequest("alice", map[string]string{"idempotency-key": key}, `{}`))
				return seen{out.StatusCode, out.Headers[idemlambda.HeaderReplayed] == "true", cookiesIn(out.Cookies, out.Headers, nil), namesACookie(out.Headers, nil), out.Headers["X-Kept"]}
			}
		},
		"RESTAPI": func(s idemlambda.Doer, runs *atomic.Int32, status int) func(string) seen {
			h := idemlambda.RESTAPI(s, nil, cookieHandler[events.APIGatewayProxyRequest](runs, status))
			return func(key string) seen {
				out, _ := h(context.Background(), testbed.RESTRequest("alice", map[string]string{"Idempotency-Key": key}, `{}`))
				return seen{out.StatusCode, out.Headers[idemlambda.HeaderReplayed] == "true", cookiesIn(nil, out.Headers, out.MultiValueHeaders), namesACookie(out.Headers, out.MultiValueHeaders), out.Headers["X-Kept"]}
			}
		},
		"ALB multi-value": func(s idemlambda.Doer, runs *atomic.Int32, status int) func(string) seen {
			h := idemlambda.ALB(s, nil, cookieHandler[events.ALBTargetGroupRequest](runs, status),
				func(o *idemlambda.Options[events.ALBTargetGroupRequest]) { o.Scope = idemlambda.ALBOIDCIdentity })
			return func(key string) seen {
				ev := testbed.ALBRequest("alice", map[string]string{"idempotency-key": key}, `{}`)
				ev.MultiValueHeaders = map[string][]string{}
				for k, v := range ev.Headers {
					ev.MultiValueHeaders[k] = []string{v}
				}
				ev.Headers = nil
				out, _ := h(context.Background(), ev)
				return seen{out.StatusCode, slices.Equal(out.MultiValueHeaders[idemlambda.HeaderReplayed], []string{"true"}),
					cookiesIn(nil, nil, out.MultiValueHeaders), namesACookie(nil, out.MultiValueHeaders), strings.Join(out.MultiValueHeaders["X-Kept"], ",")}
			}
		},
		"ALB": func(s idemlambda.Doer, runs *atomic.Int32, status int) func(string) seen {
			h := idemlambda.ALB(s, nil, cookieHandler[events.ALBTargetGroupRequest](runs, status),
				func(o *idemlambda.Options[events.ALBTargetGroupRequest]) { o.Scope = idemlambda.ALBOIDCIdentity })
			return func(key string) seen {
				out, _ := h(context.Background(), testbed.ALBRequest("alice", map[string]string{"idempotency-key": key}, `{}`))
				return seen{out.StatusCode, out.Headers[idemlambda.HeaderReplayed] == "true", cookiesIn(nil, out.Headers, out.MultiValueHeaders), namesACookie(out.Headers, out.MultiValueHeaders), out.Headers["X-Kept"]}
			}
		},
	}
	for name, door := range doors {
		for _, status := range []int{201, 402} {
			t.Run(name+" "+strconv.Itoa(status), func(t *testing.T) {
				f := newFixture(t)
				var runs atomic.Int32
				send := door(f.Store, &runs, status)
				cachedSend := door(f.NewStore(func(o *idem.Options) { o.Cache = idem.CacheOptions{MaxEntries: 10, MaxBytes: 1 << 16} }), &runs, status)
				first := send("k1")
				want := []string{"h=1; HttpOnly", "session=s1; HttpOnly"}
				if name == "ALB" {
					want = want[1:] // one value a header: the last of Cookies
				}
				if first.status != status || first.replayed || !slices.Equal(first.cookies, want) || first.kept != "yes" {
					t.Fatalf("first answer = %+v, want %d with both of the handler's cookies, %q", first, status, want)
				}
				for i, again := range []seen{send("k1"), cachedSend("k1"), cachedSend("k1")} {
					if again.status != status || !again.replayed || len(again.cookies) > 0 || again.named || again.kept != "yes" || runs.Load() != 1 {
						t.Fatalf("replay %d = %+v after %d runs, want %d, its headers and no cookie, not even an empty Set-Cookie", i, again, runs.Load(), status)
					}
				}
			})
		}
	}
}
