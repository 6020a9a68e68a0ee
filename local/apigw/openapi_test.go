package apigw_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/idemkeys/idem/local/apigw"
	"github.com/idemkeys/idem/local/template"
)

// TestServesTheOpenAPIDescription holds make run's /openapi.yaml and
// /openapi.json to the repository's openapi.yaml: the YAML byte for byte,
// the JSON the same document; a template route still wins its path, and
// before Publish both paths are API Gateway's 404.
func TestServesTheOpenAPIDescription(t *testing.T) {
	root, err := template.ProjectDir()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	auth := &apigw.Authorizer{Secret: []byte("local-secret-0123456789abcdef0123"), Issuer: "https://issuer.test", Audience: "idem-local"}
	fns := []apigw.Function{{Def: &template.Function{LogicalID: "F", Routes: []template.Route{{Method: "GET", Path: "/orders/{order_id}"}}}}}
	srv, err := apigw.New("/nonexistent-emulator", fns, auth, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	get := func(path string) (int, string, []byte) {
		t.Helper()
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(w.Result().Body)
		return w.Code, w.Header().Get("Content-Type"), body
	}
	if code, _, _ := get("/openapi.yaml"); code != http.StatusNotFound {
		t.Fatalf("before Publish: /openapi.yaml answered %d, want 404", code)
	}
	if err := srv.Publish(doc); err != nil {
		t.Fatal(err)
	}
	code, ctype, body := get("/openapi.yaml")
	if code != http.StatusOK || ctype != "application/yaml" || string(body) != string(doc) {
		t.Fatalf("/openapi.yaml: %d %q, %d bytes; want 200 application/yaml, openapi.yaml's %d bytes", code, ctype, len(body), len(doc))
	}
	code, ctype, body = get("/openapi.json")
	var fromJSON, fromYAML any
	if err := json.Unmarshal(body, &fromJSON); err != nil || code != http.StatusOK || ctype != "application/json" {
		t.Fatalf("/openapi.json: %d %q, %v", code, ctype, err)
	}
	if err := yaml.Unmarshal(doc, &fromYAML); err != nil {
		t.Fatal(err)
	}
	// Through JSON once, so numbers compare as the same type.
	b, _ := json.Marshal(fromYAML)
	if err := json.Unmarshal(b, &fromYAML); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Fatal("/openapi.json is not openapi.yaml's document")
	}
	// A template route's path is the route's (here: 401, no token), never the document.
	if code, _, _ := get("/orders/openapi.json"); code != http.StatusUnauthorized {
		t.Fatalf("/orders/openapi.json answered %d, want the route's 401", code)
	}
	if err := srv.Publish([]byte("paths:\n  200: ok\n")); err == nil {
		t.Fatal("Publish took a document with a key that is not a string")
	}
}
