package idemotel_test

import (
	"context"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemkeys/idem/pkg/idem"
	"github.com/idemkeys/idem/pkg/idem/idemotel"
	"github.com/idemkeys/idem/pkg/idemtest"
)

func ExampleNewMetrics() {
	// In a service: NewMetrics(nil), on the global MeterProvider the
	// service set up (an OTLP exporter to the ADOT collector). Here, a
	// reader the example collects from.
	reader := sdkmetric.NewManualReader()
	m, err := idemotel.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		log.Fatal(err)
	}
	store, _, err := idemtest.Open(context.Background(), func(o *idem.Options) { o.Metrics = m })
	if err != nil {
		log.Fatal(err)
	}
	fp, _ := idem.Fingerprint("POST", "/orders", []byte(`{"sku":"tea"}`), true)
	for range 2 { // the first request, then its retry
		if _, err := store.Do(context.Background(), idem.Request{Scope: "user-42", Key: "9d4a-order", Fingerprint: fp},
			func(ctx context.Context, tx *idem.Tx) (idem.Response, error) {
				return idem.Response{StatusCode: 201}, nil
			}); err != nil {
			log.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, metric := range rm.ScopeMetrics[0].Metrics {
		if metric.Name != "idem.dynamodb.calls" {
			continue
		}
		for _, p := range metric.Data.(metricdata.Histogram[int64]).DataPoints {
			outcome, _ := p.Attributes.Value("idem.outcome")
			fmt.Printf("%s: calls %d, DynamoDB calls %d\n", outcome.AsString(), p.Count, p.Sum)
		}
	}
	// Unordered output:
	// executed: calls 1, DynamoDB calls 2
	// replayed: calls 1, DynamoDB calls 1
}
