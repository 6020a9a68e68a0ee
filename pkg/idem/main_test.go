package idem_test

import (
	"os"
	"testing"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
	"github.com/idemkeys/idem/pkg/idemtest"
)

func TestMain(m *testing.M) { os.Exit(idemtest.Main(m)) }

// fixture is the one the doors' tests share (internal/testbed), with this
// package's own helpers.
type fixture struct{ *testbed.Fixture }

func newFixture(t *testing.T, optFns ...func(*idem.Options)) *fixture {
	return &fixture{testbed.New(t, optFns...)}
}

var (
	race = testbed.Race
	req  = testbed.Req
	num  = testbed.Num
	str  = testbed.Str
)
