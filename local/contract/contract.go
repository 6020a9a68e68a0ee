// Package contract holds the example API's HTTP traffic to openapi.yaml,
// the description it publishes, with a maintained OpenAPI 3.1 validator
// (libopenapi-validator): the tests of the functions and the local stack's
// end-to-end walks pass every request and answer through Check, so that an
// answer the description does not allow fails the test that got it, and a
// description that drifts from the code is found by the code's own tests.
package contract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/idemkeys/idem/local/template"
)

// Exchange is one request and the answer it got, each body whole.
type Exchange struct {
	Request      *http.Request
	RequestBody  []byte
	Response     *http.Response
	ResponseBody []byte
	// Outside says why the request is one the description refuses that
	// the API accepts on purpose (a test of that path): its answer is
	// still held to the description, its acceptance is not a breach.
	Outside string
}

var (
	loadOnce sync.Once
	loaded   validator.Validator
	loadErr  error
	// mu serialises validations: the tests send from many goroutines,
	// and the validator's caches are not documented as safe for that.
	mu sync.Mutex
)

// load reads and builds openapi.yaml's validator once per process.
func load() (validator.Validator, error) {
	loadOnce.Do(func() {
		root, err := template.ProjectDir()
		if err != nil {
			loadErr = err
			return
		}
		b, err := os.ReadFile(filepath.Join(root, "openapi.yaml"))
		if err != nil {
			loadErr = err
			return
		}
		doc, err := libopenapi.NewDocument(b)
		if err != nil {
			loadErr = fmt.Errorf("openapi.yaml: %w", err)
			return
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			loadErr = fmt.Errorf("openapi.yaml: %w", errors.Join(errs...))
			return
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			loadErr = fmt.Errorf("openapi.yaml is not a valid OpenAPI 3.1 document: %s", describe(verrs))
			return
		}
		loaded = v
	})
	return loaded, loadErr
}

// Document says whether openapi.yaml loads and is a valid OpenAPI
// document (against the OpenAPI 3.1 schema).
func Document() error {
	_, err := load()
	return err
}

// Check returns an error unless openapi.yaml allows x: its route is
// described, its answer's status, content type, body and headers are
// what the description allows for that route, and a request that the
// description refuses was not accepted (answered 2xx). A request the
// description refuses may well be refused by the API: the tests send
// such requests on purpose, and the answer they get is held to the
// description like any other.
func Check(x Exchange) error {
	v, err := load()
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	req := withBody(x.Request, x.RequestBody)
	_, reqErrs := v.ValidateHttpRequestSync(req)
	resp := *x.Response
	resp.Body = io.NopCloser(bytes.NewReader(x.ResponseBody))
	_, respErrs := v.ValidateHttpResponse(withBody(x.Request, x.RequestBody), &resp)
	what := fmt.Sprintf("%s %s answered %d", x.Request.Method, x.Request.URL.Path, x.Response.StatusCode)
	var problems []string
	if len(respErrs) > 0 {
		problems = append(problems, "the answer is not what openapi.yaml allows: "+describe(respErrs))
	}
	if len(reqErrs) > 0 && x.Response.StatusCode < 300 && x.Outside == "" {
		problems = append(problems, "a request openapi.yaml refuses was accepted: "+describe(reqErrs))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s; body %.300q", what, strings.Join(problems, "; "), x.ResponseBody)
}

// withBody is a copy of r whose body reads b from its start.
func withBody(r *http.Request, b []byte) *http.Request {
	c := r.Clone(r.Context())
	c.Body = io.NopCloser(bytes.NewReader(b))
	c.ContentLength = int64(len(b))
	return c
}

func describe(errs []*verrors.ValidationError) string {
	var out []string
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" {
			s += " (" + e.Reason + ")"
		}
		for _, se := range e.SchemaValidationErrors {
			s += fmt.Sprintf(" [%s: %s]", se.FieldPath, se.Reason)
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}
