package idemhttp_test

import (
	"os"
	"testing"

	"github.com/idemkeys/idem/pkg/idemtest"
)

func TestMain(m *testing.M) { os.Exit(idemtest.Main(m)) }
