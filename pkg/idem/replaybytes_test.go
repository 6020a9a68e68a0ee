package idem_test

import (
	"context"
	"maps"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// A replay's headers are the first answer's bytes, a value that is not
// valid UTF-8 (a Latin-1 filename) included, on both paths and in what
// Inspect shows: the SDK would write its invalid bytes as U+FFFD, so the
// record keeps such a value as binary.
func TestAReplayedHeaderThatIsNotUTF8IsTheFirstAnswersBytes(t *testing.T) {
	s := idemtest.NewStore(t)
	ctx := context.Background()
	header := map[string]string{
		"Content-Disposition": "attachment; filename=\"caf\xe9 \xff.txt\"",
		"Content-Type":        "text/plain; charset=iso-8859-1",
	}
	body := []byte("caf\xe9")
	for _, path := range []struct {
		name string
		do   func(context.Context, idem.Request, idem.Work) (idem.Result, error)
	}{{"Do", s.Do}, {"DoAtomic", s.DoAtomic}} {
		r := idem.Request{Scope: "alice", Key: "k-" + path.name, Fingerprint: "fp"}
		work := func(context.Context, *idem.Tx) (idem.Response, error) {
			return idem.Response{StatusCode: 200, Header: maps.Clone(header), Body: body}, nil
		}
		if _, err := path.do(ctx, r, work); err != nil {
			t.Fatalf("%s: %v", path.name, err)
		}
		res, err := s.Another().Do(ctx, r, work) // no cache: read from the record
		if err != nil || !res.Replayed || !maps.Equal(res.Response.Header, header) {
			t.Fatalf("%s: replay %q (replayed %v), %v; want %q", path.name, res.Response.Header, res.Replayed, err, header)
		}
		rec, err := s.Inspect(ctx, r.Scope, r.Key)
		if err != nil || rec.Response == nil || !maps.Equal(rec.Response.Header, header) {
			t.Fatalf("%s: Inspect %+v, %v; want the headers %q", path.name, rec, err, header)
		}
	}
}
