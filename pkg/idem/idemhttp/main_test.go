package idemhttp_test

import (
	"os"
	"testing"

	"github.com/idemkeys/idem/local/dynamotest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }
