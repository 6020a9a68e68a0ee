package main

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/idemkeys/idem/functions/internal/apitest"
	"github.com/idemkeys/idem/functions/internal/emf"
	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/local/proc"
	"github.com/idemkeys/idem/pkg/idem"
)

func TestOrderOutcomesAreEmittedAsEMFLines(t *testing.T) {
	raw := dynamotest.Client(t)
	idemTable := dynamotest.Table(t, raw, "IdempotencyTable")
	orders := dynamotest.Table(t, raw, "OrdersTable")
	var out proc.Output
	fn := functionClient(t)
	store, err := idem.New(fn, idemTable, func(o *idem.Options) { o.Metrics = emf.New(&out, "order") })
	if err != nil {
		t.Fatal(err)
	}
	s := &server{store: store, db: fn, table: orders, scopeClaim: "sub", log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now}
	c := apitest.Caller{T: t, Routes: apitest.Function(t, "OrderFunction").Routes, Handle: s.routes()}

	c.Send("POST", "/orders", "alice", "k-1", tea)
	c.Send("POST", "/orders", "alice", "k-1", tea)
	c.Send("POST", "/orders", "alice", "k-1", `{"items":[{"sku":"tea","quantity":3}]}`)

	docs := apitest.EMF(t, []byte(out.String()))
	var got []string
	for _, d := range docs {
		if d[emf.DimFunction] != "order" || d[emf.MetricCalls] != 1.0 {
			t.Fatalf("line %v", d)
		}
		got = append(got, d[emf.DimOutcome].(string))
	}
	want := []string{"executed", "replayed", "mismatch"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
}
