package config

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/idemkeys/idem/functions/internal/tracing"
)

// TracesFile names the file the functions append their spans to, one JSON
// line each, where no collector is: the local stack's (make run).
const TracesFile = "TRACES_FILE"

// ErrTracing is a tracing configuration the functions refuse to start on.
var ErrTracing = errors.New("tracing misconfigured")

// Tracing is the function's tracing, from the environment, read once:
//
//   - OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT):
//     OTLP over HTTP (http/protobuf) to that collector, the spans batched
//     and sent before each invocation returns, with X-Ray's trace ids: the
//     ADOT collector layer's extension, http://localhost:4318 (template.yaml,
//     AdotCollectorLayerArn).
//     The exporter's other OTEL_EXPORTER_OTLP_* variables apply.
//   - TRACES_FILE: each span appended to that file as a JSON line as it
//     ends (go run ./local/cmd/traces prints them as trees).
//   - neither, or OTEL_SDK_DISABLED=true: off, nil: nothing is traced and
//     nothing is spent.
//
// Both at once, or an OTLP protocol other than http/protobuf, is
// ErrTracing. service names the function where Lambda does not
// (AWS_LAMBDA_FUNCTION_NAME); OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override. OTEL_TRACES_SAMPLER applies (default:
// sample as the parent did, X-Ray's decision under active tracing, and
// every root).
func Tracing(ctx context.Context, service string) (*tracing.Tracing, error) {
	otlp := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	file := os.Getenv(TracesFile)
	switch {
	case os.Getenv("OTEL_SDK_DISABLED") == "true" || !otlp && file == "":
		return nil, nil
	case otlp && file != "":
		return nil, fmt.Errorf("%w: both an OTLP endpoint and %s are set; set one", ErrTracing, TracesFile)
	}
	res, err := traceResource(ctx, service)
	if err != nil {
		return nil, err
	}
	if file != "" {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644) //nolint:gosec // G302: the local stack's spans, no secret in any, for the developer's own tools (make traces) to read
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrTracing, TracesFile, err)
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(f))
		if err != nil {
			return nil, err
		}
		// Each span written as it ends, in one write: the functions'
		// processes append to one file, line by line.
		return tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res)), false), nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%w: %s=%q: the functions send OTLP over HTTP (http/protobuf) only", ErrTracing, v, p)
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: the OTLP exporter: %w", ErrTracing, err)
	}
	// X-Ray's trace ids begin with the trace's start time: a root span of
	// the function's own (a cold start's call) gets one too.
	return tracing.New(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithIDGenerator(xray.NewIDGenerator())), true), nil
}

// traceResource describes the function: its name, AWS Lambda, its Region,
// then what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say.
func traceResource(ctx context.Context, service string) (*resource.Resource, error) {
	if fn := os.Getenv("AWS_LAMBDA_FUNCTION_NAME"); fn != "" {
		service = fn
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(service), semconv.CloudProviderAWS, semconv.CloudPlatformAWSLambda,
			semconv.CloudRegion(os.Getenv("AWS_REGION")), semconv.FaaSName(service), semconv.FaaSVersion(os.Getenv("AWS_LAMBDA_FUNCTION_VERSION"))),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("%w: the resource: %w", ErrTracing, err)
	}
	return res, nil
}
