package apigw

import (
	"encoding/json"
	"fmt"
	"net/http"

	"gopkg.in/yaml.v3"
)

// document is the API's OpenAPI description as served: the YAML as
// written and the same document in JSON.
type document struct {
	yaml, json []byte
}

// Publish has the server answer GET /openapi.yaml with doc, an OpenAPI
// description in YAML, and GET /openapi.json with the same document in
// JSON, where no route of the template takes those paths. API Gateway
// serves no such path itself: it is make run's, for a reader and for
// tools. It fails on a doc that is not YAML, or not a mapping.
func (s *Server) Publish(doc []byte) error {
	var v map[string]any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return fmt.Errorf("openapi: %w", err)
	}
	if v == nil {
		return fmt.Errorf("openapi: the document is empty")
	}
	j, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("openapi: %w", err) // a mapping key that is not a string, say a bare 200
	}
	s.doc.Store(&document{yaml: doc, json: j})
	return nil
}

// serveDocument answers r with the published description if it asks for
// it, and says whether it did.
func (s *Server) serveDocument(w http.ResponseWriter, r *http.Request) bool {
	d := s.doc.Load()
	if d == nil || r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	var body []byte
	switch r.URL.Path {
	case "/openapi.yaml":
		w.Header().Set("Content-Type", "application/yaml")
		body = d.yaml
	case "/openapi.json":
		w.Header().Set("Content-Type", "application/json")
		body = d.json
	default:
		return false
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body) // a failed write is the client gone: there is no one left to tell
	}
	return true
}
