// Command echo is the function that local/apigw's tests put behind the
// local API, under the Runtime Interface Emulator. By route it answers with
// the event it was given (POST /event), its output being the request's body
// (POST /output), or the body's length (POST /size); POST /sleep sleeps
// for the milliseconds its body gives, past its timeout if asked.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (json.RawMessage, error) {
		body := []byte(ev.Body)
		if ev.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(ev.Body)
			if err != nil {
				return nil, err
			}
			body = b
		}
		switch ev.RouteKey {
		case "POST /output":
			return body, nil
		case "POST /sleep":
			ms, _ := strconv.Atoi(string(body))
			time.Sleep(time.Duration(ms) * time.Millisecond)
			return json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "slept"})
		case "POST /size":
			return json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: strconv.Itoa(len(body))})
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		return json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"content-type": "application/json"}, Body: string(b)})
	})
}
