package door_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
)

// capture is a Doer that records the fingerprints it is handed.
type capture struct{ fps []string }

func (c *capture) Do(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error) {
	c.fps = append(c.fps, req.Fingerprint)
	return idem.Result{}, errors.New("capture")
}
func (c *capture) DoAtomic(ctx context.Context, req idem.Request, work idem.Work) (idem.Result, error) {
	return c.Do(ctx, req, work)
}

type goldenAmount struct {
	Total big.Int `json:"total"`
	Note  string  `json:"note"`
}

type goldenPlain struct {
	Key  string          `json:"key"`
	Body json.RawMessage `json:"body"`
}

// TestEveryDoorsFingerprintIsTheOneBefore: each door hands Do the same
// fingerprint for the same request as pkg/idem did before its doors moved
// (840402a), so that records stored before a deploy keep matching their
// retries (a changed fingerprint is a 422 for a client's honest retry).
// Function's default takes the input's value, as json.Marshal of a value
// does (a pointer-receiver marshaler is not called).
func TestEveryDoorsFingerprintIsTheOneBefore(t *testing.T) {
	c := &capture{}
	out := map[string]string{}
	last := func(name string) {
		if len(c.fps) == 0 {
			out[name] = "NONE"
			return
		}
		out[name] = c.fps[len(c.fps)-1]
		c.fps = nil
	}
	ctx := context.Background()
	jwt := func(ev *events.APIGatewayV2HTTPRequest) {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}}}
	}
	ok := func() (idem.Response, error) { return idem.Response{StatusCode: 200}, nil }
	{
		h := idemlambda.HTTPAPI[struct{}](c, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
			return ok()
		})
		for i, ev := range goldenHTTPAPIEvents() {
			jwt(&ev)
			_, _ = h(ctx, ev) // capture refuses every call: the fingerprint it saw is what is read
			last(fmt.Sprintf("httpapi/%d", i))
		}
	}
	{
		h := idemlambda.RESTAPI[struct{}](c, nil, func(ctx context.Context, req idemlambda.Request[events.APIGatewayProxyRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
			return ok()
		})
		for i, ev := range goldenRESTEvents() {
			_, _ = h(ctx, ev) // capture refuses every call: the fingerprint it saw is what is read
			last(fmt.Sprintf("rest/%d", i))
		}
	}
	{
		h := idemlambda.FunctionURL[struct{}](c, nil, func(ctx context.Context, req idemlambda.Request[events.LambdaFunctionURLRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
			return ok()
		})
		for i, ev := range goldenURLEvents() {
			_, _ = h(ctx, ev) // capture refuses every call: the fingerprint it saw is what is read
			last(fmt.Sprintf("url/%d", i))
		}
	}
	{
		h := idemlambda.ALB[struct{}](c, nil, func(ctx context.Context, req idemlambda.Request[events.ALBTargetGroupRequest, struct{}], tx *idem.Tx) (idem.Response, error) {
			return ok()
		},
			func(o *idemlambda.Options[events.ALBTargetGroupRequest]) { o.Scope = idemlambda.ALBOIDCIdentity })
		for i, ev := range goldenALBEvents() {
			_, _ = h(ctx, ev) // capture refuses every call: the fingerprint it saw is what is read
			last(fmt.Sprintf("alb/%d", i))
		}
	}
	{
		h := idemhttp.Wrap[struct{}](c, nil, func(ctx context.Context, req idemhttp.Request[http.Request, struct{}], tx *idem.Tx) (idem.Response, error) {
			return idem.Response{StatusCode: 201}, nil
		},
			func(o *idemhttp.Options[http.Request]) { o.Scope = func(*http.Request) string { return "alice" } })
		mux := http.NewServeMux()
		mux.Handle("POST /things/{id}", h)
		mux.Handle("PUT /files/{rest...}", h)
		mux.Handle("/raw/", h)
		for i, r := range goldenNetHTTPRequests() {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, r)
			last(fmt.Sprintf("nethttp/%d", i))
		}
	}
	{
		h := idemlambda.SQS(c, func(ctx context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error { return nil },
			func(o *idemlambda.ConsumerOptions[events.SQSMessage]) { o.Scope = "consumer" })
		for i, m := range goldenSQSMessages() {
			_, _ = h(ctx, events.SQSEvent{Records: []events.SQSMessage{m}}) // capture refuses every call: the fingerprint it saw is what is read
			last(fmt.Sprintf("sqs/%d", i))
		}
		h2 := idemlambda.SQS(c, func(ctx context.Context, ev idemlambda.Event[events.SQSMessage], tx *idem.Tx) error { return nil },
			func(o *idemlambda.ConsumerOptions[events.SQSMessage]) {
				o.Scope = "consumer"
				o.Key = idemlambda.SQSAttribute("eid")
			})
		for i, m := range goldenSQSMessages() {
			_, _ = h2(ctx, events.SQSEvent{Records: []events.SQSMessage{m}}) // capture refuses every call: the fingerprint it saw is what is read
			last(fmt.Sprintf("sqs-attr/%d", i))
		}
	}
	{
		h := idemlambda.EventBridge(c, func(ctx context.Context, ev idemlambda.Event[events.CloudWatchEvent], tx *idem.Tx) error { return nil },
			func(o *idemlambda.ConsumerOptions[events.CloudWatchEvent]) { o.Scope = "consumer" })
		for i, ev := range goldenEBEvents() {
			_ = h(ctx, ev) // capture refuses every call: the fingerprint it saw is what is read
			last(fmt.Sprintf("eventbridge/%d", i))
		}
	}
	{
		h := idemlambda.Function(c, func(ctx context.Context, ev idemlambda.Event[goldenPlain], tx *idem.Tx) (string, error) {
			return "ok", nil
		},
			func(o *idemlambda.ConsumerOptions[goldenPlain]) {
				o.Scope = "fn"
				o.Key = func(in *goldenPlain) (string, error) { return in.Key, nil }
			})
		_, _ = h(ctx, goldenPlain{Key: "k1", Body: json.RawMessage(`{"b":1, "a":2}`)}) // capture refuses every call: the fingerprint it saw is what is read
		last("function/plain")
		h2 := idemlambda.Function(c, func(ctx context.Context, ev idemlambda.Event[goldenPlain], tx *idem.Tx) (string, error) {
			return "ok", nil
		},
			func(o *idemlambda.ConsumerOptions[goldenPlain]) {
				o.Scope = "fn"
				o.Key = func(in *goldenPlain) (string, error) { return in.Key, nil }
				o.Fingerprint = func(in *goldenPlain) any { return in.Body }
			})
		_, _ = h2(ctx, goldenPlain{Key: "k1", Body: json.RawMessage(`{"b":1, "a":2}`)}) // capture refuses every call: the fingerprint it saw is what is read
		last("function/custom")
		h3 := idemlambda.Function(c, func(ctx context.Context, ev idemlambda.Event[goldenAmount], tx *idem.Tx) (string, error) {
			return "ok", nil
		},
			func(o *idemlambda.ConsumerOptions[goldenAmount]) {
				o.Scope = "fn"
				o.Key = func(in *goldenAmount) (string, error) { return "k1", nil }
			})
		var a goldenAmount
		a.Total.SetInt64(1234)
		a.Note = "x"
		_, _ = h3(ctx, a) // capture refuses every call: the fingerprint it saw is what is read
		last("function/bigint")
		h4 := idemlambda.Function(c, func(ctx context.Context, ev idemlambda.Event[map[string]any], tx *idem.Tx) (string, error) {
			return "ok", nil
		},
			func(o *idemlambda.ConsumerOptions[map[string]any]) {
				o.Scope = "fn"
				o.Key = func(in *map[string]any) (string, error) { return "k1", nil }
			})
		_, _ = h4(ctx, map[string]any{"z": 1, "a": []any{1, "x"}}) // capture refuses every call: the fingerprint it saw is what is read
		last("function/map")
	}
	for name, want := range goldenFingerprints {
		if out[name] != want {
			t.Errorf("%s: fingerprint %s, want %s (pkg/idem's before its doors moved)", name, out[name], want)
		}
	}
	if len(out) != len(goldenFingerprints) {
		t.Errorf("%d fingerprints taken, %d pinned", len(out), len(goldenFingerprints))
	}
}

// goldenFingerprints are what 840402a's doors handed Do for the requests
// above, but for nethttp/2, a request under a subtree pattern ("/raw/"),
// whose path beneath the pattern is part of the request, and eventbridge/1,
// whose source holds a '/', escaped so that no split of it into source and
// detail type reads as another's.
var goldenFingerprints = map[string]string{
	"alb/0":           "v2:e3f73ef6e1d825aeef34f9f686627381a276829b07d6184c42151de122307c3b",
	"alb/1":           "v2:41a5b1fa0fd8824c4e26772c1954004c726d7308c4b5bc6683d8b9b88a40048f",
	"eventbridge/0":   "v2:4344d09ad87e403b90530954c8e56dad2344903119bf6227d0bec6b95a46e504",
	"eventbridge/1":   "v2:e0f7e88b8e10187bf9849614e805a93716aef0cf7251939e8746df479181b5fe",
	"function/bigint": "v2:c18233445e7d0da16f2b2062ec36eab8e97313479d4844acd3bdf22d3d13a5f7",
	"function/custom": "v2:c5caa78debcf63f37ab9244c1eda76a5f20f377198aeb89eda788caebad31f4c",
	"function/map":    "v2:42ccc0b56705aeef660e339b1f2e7f6aab7737d92c59bf1c928c9a5d410356c2",
	"function/plain":  "v2:490311cce4440779c384a82d27590a111866eb6e7837118ecd83902cb05112bf",
	"httpapi/0":       "v2:6d910a4eb4c8bc2dcc85f815156ae22ba5ef0e38c1e1ced99637ccf45a6cb398",
	"httpapi/1":       "v2:a5d3229f1420f48af6ee83ee983b0d098521f0ad9b803f715a035e06663559f9",
	"httpapi/2":       "v2:e5a298e2de8e9050ba868152b41c788fbdd11c17d470faaa9b48494de0fa8165",
	"httpapi/3":       "v2:9ae359af1d54dfbaadc2471f822947260094230e9dc4fdd1a9b7de2a4208172c",
	"httpapi/4":       "v2:82f106f2288bdf5f2f8ba489d49837a5483ddf32bc4bc601954f367b1d7ae92e",
	"httpapi/5":       "v2:6e8d84710ca2fe0f7f3a1ea92a51d3af7f275dfdfbcc83cd5efb351a3094ab61",
	"nethttp/0":       "v2:a82be38528f04b8134368313b856ee82d40338b26acbbd417f42cb9955133a5b",
	"nethttp/1":       "v2:3153949d0904b5452f5278f3ac4b7f61fa4dcaea32a787807430aba3560b6b38",
	"nethttp/2":       "v2:c34e37f4fcf0c0d0bef80b7a20e722a2ace7c011350c3717f122fb4b33ffb46d",
	"rest/0":          "v2:56bc67fef133524288005a1377003d98754824a46929ced69f2b0adfa29c7bcf",
	"rest/1":          "v2:34019bd0fcd04a7e64eea9084da44349cc81793d914824237de9450f1852baa6",
	"sqs-attr/0":      "v2:739222b6be93dd081e064059a0069fa365f1ee97a7d8a552e0a0335194bddc90",
	"sqs-attr/1":      "v2:4a517570c14e560a00842eebf82c4ec10f32a1e265fc8640c8205a12ef0b75c2",
	"sqs/0":           "v2:739222b6be93dd081e064059a0069fa365f1ee97a7d8a552e0a0335194bddc90",
	"sqs/1":           "v2:4a517570c14e560a00842eebf82c4ec10f32a1e265fc8640c8205a12ef0b75c2",
	"url/0":           "v2:9ff2048c061756555f03d8a633aa60c784bf92d3edf53ba29909c54aba9636bf",
	"url/1":           "v2:65ee72632781b2da2332327c7af5d6c2ccc95d77feb66c26d9446fc8276e100a",
}
