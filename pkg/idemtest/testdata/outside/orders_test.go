package orders_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/idemkeys/idem/pkg/idemtest"

	"example.com/orders"
)

func TestMain(m *testing.M) { os.Exit(idemtest.Main(m)) }

func TestARetryGetsTheFirstAnswer(t *testing.T) {
	s := idemtest.NewStore(t)
	svc := orders.Service{Store: s.Store, Orders: idemtest.CreateTable(t, s.Client, &orders.Table)}
	first, err := svc.Create(context.Background(), "alice", "key-1", "o1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.Create(context.Background(), "alice", "key-1", "o1")
	if err != nil || !again.Replayed || !bytes.Equal(again.Response.Body, first.Response.Body) {
		t.Fatalf("retry = %+v, %v; want the first answer replayed", again, err)
	}
	if n := s.Faults.Calls(idemtest.TransactWriteItems); n != 1 {
		t.Fatalf("%d commits, want 1: the retry ran the work again", n)
	}
}

func TestACommitWhoseAnswerIsLostIsNotDoneTwice(t *testing.T) {
	s := idemtest.NewStore(t)
	svc := orders.Service{Store: s.Store, Orders: idemtest.CreateTable(t, s.Client, &orders.Table)}
	s.Faults.Inject(idemtest.Fault{Op: idemtest.TransactWriteItems, Kind: idemtest.LostAnswer})
	res, err := svc.Create(context.Background(), "alice", "key-1", "o1")
	if err != nil || res.Response.StatusCode != 201 {
		t.Fatalf("got %+v, %v; want the order created, its lost answer recovered", res, err)
	}
	again, err := svc.Create(context.Background(), "alice", "key-1", "o1")
	if err != nil || !again.Replayed {
		t.Fatalf("retry = %+v, %v; want the first answer replayed", again, err)
	}
	if s.Faults.Injected(idemtest.TransactWriteItems) != 1 || s.Faults.Calls(idemtest.TransactWriteItems) != 1 {
		t.Fatal("the commit was not sent once, its answer lost")
	}
}
