// Command hello is the smallest Go Lambda: the baseline the functions' cold
// starts are measured against.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(ctx context.Context, ev map[string]any) (string, error) { return "hello", nil })
}
