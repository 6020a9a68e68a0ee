package idem_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idemtest"
)

// A fingerprint that is not valid UTF-8 (a raw digest, string(sum[:])) is
// refused with ErrInvalidBody before any write: stored, the SDK would write
// its invalid bytes as U+FFFD, the record would never match the request
// again, and the retry after a failure would get 422 until the record
// expires.
func TestAFingerprintThatIsNotUTF8IsRefusedBeforeAnyWrite(t *testing.T) {
	s := idemtest.NewStore(t)
	sum := sha256.Sum256([]byte("POST /orders {}"))
	r := idem.Request{Scope: "alice", Key: "k1", Fingerprint: string(sum[:])}
	runs := 0
	for _, do := range []func(context.Context, idem.Request, idem.Work) (idem.Result, error){s.Do, s.DoAtomic} {
		_, err := do(context.Background(), r, func(context.Context, *idem.Tx) (idem.Response, error) {
			runs++
			return idem.Response{}, errors.New("provider timed out")
		})
		if !errors.Is(err, idem.ErrInvalidBody) {
			t.Fatalf("err = %v, want ErrInvalidBody", err)
		}
	}
	sent := s.Faults.Calls(idemtest.PutItem) + s.Faults.Calls(idemtest.TransactWriteItems) + s.Faults.Calls(idemtest.UpdateItem)
	if runs != 0 || sent != 0 {
		t.Fatalf("%d runs and %d writes sent; want none", runs, sent)
	}
}
