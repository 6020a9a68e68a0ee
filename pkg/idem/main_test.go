package idem_test

import (
	"os"
	"testing"

	"github.com/idemkeys/idem/local/dynamotest"
	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

// fixture is the one the doors' tests share (internal/testbed), with this
// package's own helpers.
type fixture struct{ *testbed.Fixture }

func newFixture(t *testing.T, optFns ...func(*idem.Options)) *fixture {
	return &fixture{testbed.New(t, optFns...)}
}

var (
	race     = testbed.Race
	req      = testbed.Req
	num      = testbed.Num
	str      = testbed.Str
	newClock = testbed.NewClock
)
