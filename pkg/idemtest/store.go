package idemtest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkeys/idem/pkg/idem"
)

// Store is an *idem.Store on a fresh table of the engine, for one test: its
// clock is Clock and its DynamoDB calls go through Faults.
type Store struct {
	*idem.Store
	// Client reaches the engine directly, past Faults: to create other
	// tables and read what was written.
	Client *dynamodb.Client
	// Table is the idempotency table's name.
	Table string
	// Clock is the Store's Options.Clock.
	Clock *Clock
	// Faults carries every DynamoDB call of the Store, and of the Stores
	// Another returns.
	Faults *Faults

	t    testing.TB
	opts []func(*idem.Options)
}

// NewStore returns a Store on a fresh idempotency table (see Table), with
// a Clock that starts at the real time, and optFns applied after the
// clock (an Options.Clock there replaces it). It fails the test if there
// is no engine or idem.New refuses the options.
func NewStore(t testing.TB, optFns ...func(*idem.Options)) *Store {
	t.Helper()
	db := Client(t)
	s := &Store{Client: db, Table: Table(t, db), Clock: NewClock(), t: t, opts: optFns}
	s.Faults = NewFaults(t, db)
	s.Store = s.Another()
	return s
}

// Another returns another *idem.Store on the same table, clock and Faults,
// with NewStore's options and then optFns: a second Lambda racing the
// first for a key, or the one that takes over after a crash.
func (s *Store) Another(optFns ...func(*idem.Options)) *idem.Store {
	s.t.Helper()
	fns := append([]func(*idem.Options){func(o *idem.Options) { o.Clock = s.Clock.Now }}, s.opts...)
	st, err := idem.New(s.Faults, s.Table, append(fns, optFns...)...)
	if err != nil {
		s.t.Fatalf("idemtest: %v", err)
	}
	return st
}

// Clock is a time source that a test moves by hand, to let a lease lapse or
// a record expire without sleeping. It is safe for concurrent use.
//
// It starts at the real time because DynamoDB Local's TTL runs on the real
// clock: a record written from a date in the past would be deleted under the
// test. Advance it to expire what the test needs expired.
type Clock struct{ now atomic.Int64 }

// NewClock returns a Clock set to time.Now.
func NewClock() *Clock {
	c := &Clock{}
	c.now.Store(time.Now().UnixNano())
	return c
}

// Now is the clock's time: pass it as idem.Options.Clock.
func (c *Clock) Now() time.Time { return time.Unix(0, c.now.Load()) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.now.Add(int64(d)) }
