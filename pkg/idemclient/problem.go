package idemclient

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
)

// maxErrorBody is how much of an error body is read to find its code.
const maxErrorBody = 64 << 10

// ProblemCode returns the machine-readable code of an error response: the
// "code" member of RFC 9457 problem details (application/problem+json), or
// the code of the {"error":{"code":...,"message":...}} form, whichever the
// body holds; "" if it holds neither. It reads at most 64 KiB of the body
// and puts what it read back, so the body can still be read in full.
func ProblemCode(resp *http.Response) string {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return ""
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "" && mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return ""
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = &rewound{Reader: io.MultiReader(bytes.NewReader(head), resp.Body), Closer: resp.Body}
	if err != nil {
		return ""
	}
	return codeOf(head)
}

// codeOf reads the code from either error shape.
func codeOf(body []byte) string {
	var doc struct {
		Code  json.RawMessage `json:"code"`  // problem details' extension member
		Error json.RawMessage `json:"error"` // {"error":{"code":...}}
	}
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	var code string
	if json.Unmarshal(doc.Code, &code) == nil && code != "" {
		return code
	}
	var inner struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(doc.Error, &inner) == nil {
		return inner.Code
	}
	return ""
}

// Replayed reports whether the server answered from its store: the
// response of an earlier attempt, or of an earlier operation under the
// same key ("Idempotent-Replayed: true").
func Replayed(resp *http.Response) bool {
	return resp != nil && strings.EqualFold(resp.Header.Get(HeaderReplayed), "true")
}

// Key returns the Idempotency-Key that the request behind resp carried, ""
// if it carried none.
func Key(resp *http.Response) string {
	if resp == nil || resp.Request == nil {
		return ""
	}
	return resp.Request.Header.Get(HeaderKey)
}

type rewound struct {
	io.Reader
	io.Closer
}
