package idemlambda_test

import (
	"encoding/base64"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemlambda"
	"github.com/idemkeys/idem/pkg/idem/internal/testbed"
	"github.com/idemkeys/idem/pkg/idemtest"
)

func TestMain(m *testing.M) { os.Exit(idemtest.Main(m)) }

func newFixture(t *testing.T, optFns ...func(*idem.Options)) *testbed.Fixture {
	return testbed.New(t, optFns...)
}

var apiRequest = testbed.APIRequest

// apiReq is the request an HTTPAPI handler gets.
type apiReq = idemlambda.Request[events.APIGatewayV2HTTPRequest, struct{}]

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
