package idemlambda

import (
	"context"
	"encoding/json"

	"github.com/idemkeys/idem/pkg/idem"
)

// Function wraps any typed Lambda handler (a Step Functions task, a direct
// invocation) so that it runs once per key: the first call runs h, stores
// its Out as JSON and returns it; a repeat returns the stored Out, decoded;
// a repeat of the key with another input fails with
// idem.ErrFingerprintMismatch, on every call (the caller's retry policy, a
// Step Functions Catch, decides what then), a concurrent one with
// idem.ErrInProgress;
// an input whose key is "" with ErrNoKey, or with PassThrough runs h
// without a record. An error from h lapses the lease and is returned. It
// panics without ConsumerOptions.Scope and Key.
func Function[In, Out any](s Doer, h func(ctx context.Context, ev Event[In], tx *idem.Tx) (Out, error), optFns ...func(*ConsumerOptions[In])) func(context.Context, In) (Out, error) {
	c := newConsumer("Function", optFns)
	c.kind = "FUNCTION"
	if c.Key == nil {
		panic(idemOptionsError("Function: ConsumerOptions.Key reads the key from the input"))
	}
	committer, canCommit := s.(interface {
		Commit(context.Context, *idem.Tx) (*idem.Response, error)
	})
	if c.PassThrough && !canCommit {
		panic(idemOptionsError("Function: PassThrough needs a Doer with Commit, as *idem.Store has"))
	}
	if c.Fingerprint == nil {
		c.Fingerprint = func(in *In) any { return *in } // the value, as fingerprints were made before
	}
	do := s.Do
	if c.Atomic {
		do = s.DoAtomic
	}
	return func(ctx context.Context, in In) (Out, error) {
		var out Out
		key, err := c.Key(&in)
		if err != nil {
			return out, err
		}
		if key == "" && c.PassThrough {
			return passThrough(ctx, committer, h, Event[In]{Event: &in, Scope: c.Scope})
		}
		if key == "" {
			return out, ErrNoKey
		}
		fp, err := c.fingerprint(&in)
		if err != nil {
			return out, err
		}
		res, err := do(ctx, idem.Request{Scope: c.Scope, Key: key, Fingerprint: fp}, func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
			v, err := h(ctx, Event[In]{Event: &in, Scope: c.Scope, Key: key}, tx)
			if err != nil {
				return idem.Response{}, err
			}
			body, err := json.Marshal(v)
			return idem.Response{StatusCode: 200, Body: body}, err
		})
		if err != nil {
			return out, err
		}
		err = json.Unmarshal(res.Response.Body, &out)
		return out, err
	}
}

// passThrough runs h for a keyless input and commits its writes alone, in
// one transaction, checked against DynamoDB's limits first (Store.Commit).
// A write whose condition fails with a ConflictFunc answers as on the keyed
// path: the conflict's response, decoded into Out.
func passThrough[In, Out any](ctx context.Context, s interface {
	Commit(context.Context, *idem.Tx) (*idem.Response, error)
}, h func(context.Context, Event[In], *idem.Tx) (Out, error), ev Event[In]) (Out, error) {
	var tx idem.Tx
	out, err := h(ctx, ev, &tx)
	if err != nil {
		return out, err
	}
	conflict, err := s.Commit(ctx, &tx)
	if err != nil || conflict == nil {
		return out, err
	}
	var answer Out
	return answer, json.Unmarshal(conflict.Body, &answer)
}
