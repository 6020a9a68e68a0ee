package idemhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemhttp"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// A net/http service: wrap a handler of the door's shape, register it on a
// ServeMux pattern; the scope is the caller an authentication middleware in
// front verified.
func ExampleWrap() {
	// In a service: idem.New(dynamodb.NewFromConfig(cfg), os.Getenv("IDEMPOTENCY_TABLE")).
	store, _, err := idemtest.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	type user struct{}
	type shipment struct {
		Carrier string `json:"carrier"`
	}
	parse := func(body []byte) (shipment, error) {
		var s shipment
		if err := json.Unmarshal(body, &s); err != nil || s.Carrier == "" {
			return s, &idemhttp.Refusal{StatusCode: 400, Code: "invalid_request", Message: "carrier is required"}
		}
		return s, nil
	}
	ship := idemhttp.Wrap(store, parse, func(ctx context.Context, req idemhttp.Request[http.Request, shipment], tx *idem.Tx) (idem.Response, error) {
		return idem.Response{StatusCode: 201, Body: []byte(req.Event.PathValue("id") + " ships with " + req.Body.Carrier)}, nil
	}, func(o *idemhttp.Options[http.Request]) {
		o.Scope = func(r *http.Request) string { s, _ := r.Context().Value(user{}).(string); return s }
	})
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/ship", ship)

	for range 2 { // the client retries with the same key
		r := httptest.NewRequest("POST", "/orders/o1/ship", strings.NewReader(`{"carrier":"ups"}`))
		r.Header.Set(idemhttp.HeaderIdempotencyKey, `"ship-o1"`)             // the IETF draft's quoted form
		r = r.WithContext(context.WithValue(r.Context(), user{}, "user-42")) // as the auth middleware would
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Printf("%d %s replayed=%q\n", w.Code, w.Body, w.Header().Get(idemhttp.HeaderReplayed))
	}
	// Output:
	// 201 o1 ships with ups replayed=""
	// 201 o1 ships with ups replayed="true"
}

func ExampleParseKey() {
	for _, h := range []string{`8e03978e-40d5`, `"8e03978e-40d5"`, "k1, k2", "bad\x01key"} {
		key, err := idemhttp.ParseKey(h)
		fmt.Printf("%q %v\n", key, err)
	}
	// Output:
	// "8e03978e-40d5" <nil>
	// "8e03978e-40d5" <nil>
	// "" idem: invalid idempotency key: several keys (a repeated header arrives comma-joined); send one, quoted if it holds a comma
	// "" idem: invalid idempotency key: byte 0x01 at offset 3 is not printable ASCII
}
