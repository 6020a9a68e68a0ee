package config_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkeys/idem/functions/internal/config"
	"github.com/idemkeys/idem/functions/internal/tracing"
)

// tracingEnv clears what config.Tracing reads, then sets kv.
func tracingEnv(t *testing.T, kv ...string) {
	t.Helper()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER",
		"AWS_LAMBDA_FUNCTION_NAME", config.TracesFile} {
		t.Setenv(k, "")
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

// invoke makes one invocation: its spans are what the tests check.
func invoke(tr *tracing.Tracing) {
	_, _ = tracing.HTTP(tr, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	})(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: "GET /orders/{order_id}"})
}

// With no exporter named, or the SDK disabled, tracing is off: nil, which
// installs nothing anywhere.
func TestTracingIsOffUnlessAnExporterIsNamed(t *testing.T) {
	for _, env := range [][]string{nil, {"OTEL_SDK_DISABLED", "true", config.TracesFile, filepath.Join(t.TempDir(), "t.jsonl")}} {
		tracingEnv(t, env...)
		tr, err := config.Tracing(context.Background(), "order")
		if tr != nil || err != nil {
			t.Errorf("%v: %v, %v; want off", env, tr, err)
		}
	}
}

// Two exporters at once, or OTLP over gRPC, are refused with their cause.
func TestAnAmbiguousOrUnsupportedExporterIsRefused(t *testing.T) {
	for _, env := range [][]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318", config.TracesFile, "t.jsonl"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
	} {
		tracingEnv(t, env...)
		if tr, err := config.Tracing(context.Background(), "order"); tr != nil || !errors.Is(err, config.ErrTracing) {
			t.Errorf("%v: %v, %v; want ErrTracing", env, tr, err)
		}
	}
}

// TRACES_FILE: every span appended to the file as a JSON line as it ends,
// the function named in the resource; the processes of a stack append to
// one file, line by line.
func TestTheFileExporterAppendsALinePerSpan(t *testing.T) {
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	tracingEnv(t, config.TracesFile, file, "AWS_LAMBDA_FUNCTION_NAME", "order")
	a, err := config.Tracing(context.Background(), "fallback")
	if err != nil {
		t.Fatal(err)
	}
	b, err := config.Tracing(context.Background(), "fallback") // another process of the stack
	if err != nil {
		t.Fatal(err)
	}
	invoke(a)
	invoke(b)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var span struct {
			Name     string
			Resource []struct {
				Key   string
				Value struct{ Value any }
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &span); err != nil || span.Name != "GET /orders/{order_id}" {
			t.Fatalf("line %d: %v %s", lines, err, sc.Text())
		}
		service := ""
		for _, kv := range span.Resource {
			if kv.Key == "service.name" {
				service, _ = kv.Value.Value.(string)
			}
		}
		if service != "order" {
			t.Errorf("line %d: service.name %q, want the function's name", lines, service)
		}
	}
	if lines != 2 {
		t.Errorf("%d lines, want one per span", lines)
	}
}

// OTEL_EXPORTER_OTLP_ENDPOINT: the spans go over OTLP/HTTP to that
// collector, and have gone when the invocation returns; a root span's trace
// id is one X-Ray takes, its start time first.
func TestTheOTLPExporterHasSentTheSpansWhenTheInvocationReturns(t *testing.T) {
	var mu sync.Mutex
	var got []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		if len(b) == 0 {
			http.Error(w, "empty", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	tracingEnv(t, "OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	tr, err := config.Tracing(context.Background(), "charge")
	if err != nil || tr == nil {
		t.Fatalf("%v, %v", tr, err)
	}
	invoke(tr)
	mu.Lock()
	if len(got) != 1 || got[0] != "POST /v1/traces application/x-protobuf" {
		t.Errorf("the collector got %v when the invocation returned, want one POST /v1/traces of protobuf", got)
	}
	mu.Unlock()
	_, root := tr.Provider().Tracer("t").Start(context.Background(), "root")
	root.End()
	if epoch, err := strconv.ParseInt(root.SpanContext().TraceID().String()[:8], 16, 64); err != nil || time.Since(time.Unix(epoch, 0)).Abs() > time.Hour {
		t.Errorf("trace id %s does not begin with the time (X-Ray's form)", root.SpanContext().TraceID())
	}
	_ = tr.Shutdown(context.Background()) // what it sends is the root span, which this test does not check
}
