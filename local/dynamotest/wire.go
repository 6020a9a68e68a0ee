package dynamotest

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Wire sits under a client as its HTTP client and counts every attempt the
// SDK sends, its own retries included, by operation and answer: "PutItem
// ok", "PutItem ConditionalCheckFailedException",
// "TransactWriteItems TransactionCanceledException [ConditionalCheckFailed None]",
// "PutItem TransactionConflictException". It also sums the time the
// attempts spent on the wire, from sending to the answer's last byte.
//
//	w := &dynamotest.Wire{}
//	db := dynamotest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = w })
type Wire struct {
	// Next sends the attempts (default: the SDK's own default client, so
	// that its connection pool is what the client would have had).
	Next aws.HTTPClient

	mu      sync.Mutex
	answers map[string]int
	wire    time.Duration
	dials   int
}

var (
	errType = regexp.MustCompile(`"__type"\s*:\s*"(?:[^"#]*#)?([^"]+)"`)
	reason  = regexp.MustCompile(`"Code"\s*:\s*"([^"]+)"`)
)

// Do sends one attempt and counts it.
func (w *Wire) Do(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	w.mu.Lock()
	if w.Next == nil {
		w.Next = awshttp.NewBuildableClient().WithDialerOptions(func(d *net.Dialer) {
			d.Control = func(network, address string, c syscall.RawConn) error {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.dials++
				return nil
			}
		})
	}
	next := w.Next
	w.mu.Unlock()
	start := time.Now()
	resp, err := next.Do(req)
	answer := "ok"
	switch {
	case err != nil:
		answer = "transport error"
	case resp.StatusCode != http.StatusOK:
		body, rerr := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // what was read is kept; a failed close loses nothing of it
		resp.Body = io.NopCloser(bytes.NewReader(body))
		err = rerr
		answer = fmt.Sprint(resp.StatusCode)
		if m := errType.FindSubmatch(body); m != nil {
			answer = string(m[1])
		}
		if answer == "TransactionCanceledException" {
			var codes []string
			for _, m := range reason.FindAllSubmatch(body, -1) {
				codes = append(codes, string(m[1]))
			}
			answer += " " + fmt.Sprint(codes)
		}
	}
	d := time.Since(start)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.answers == nil {
		w.answers = map[string]int{}
	}
	w.answers[op+" "+answer]++
	w.wire += d
	return resp, err
}

// Answers returns the attempts so far by operation and answer.
func (w *Wire) Answers() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.answers)
}

// Reset forgets the attempts so far.
func (w *Wire) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answers, w.wire, w.dials = nil, 0, 0
}

// Connections is the number of connections the default Next opened (none
// are counted when Next was given).
func (w *Wire) Connections() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dials
}

// Attempts is the number of attempts so far.
func (w *Wire) Attempts() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.answers {
		n += c
	}
	return n
}

// OnTheWire is the attempts' time summed: with concurrent callers, more
// than the time that passed.
func (w *Wire) OnTheWire() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wire
}
