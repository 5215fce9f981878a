// Package telemetry sets up OpenTelemetry for a Seam process: a tracer
// provider configured from the standard OTEL_* environment variables, W3C
// propagation, metrics through the OTel API exported for Prometheus, and
// slog loggers that carry trace ids.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Config says how to set telemetry up.
type Config struct {
	// ServiceName is the default service.name; OTEL_SERVICE_NAME wins.
	ServiceName string
	Version     string
	// SpanProcessors are added to the tracer provider (tests add an
	// in-memory exporter here).
	SpanProcessors []sdktrace.SpanProcessor
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Telemetry owns a process's providers.
type Telemetry struct {
	TracerProvider *sdktrace.TracerProvider
	MeterProvider  *sdkmetric.MeterProvider
	Propagator     propagation.TextMapPropagator
	// Metrics serves the Prometheus exposition of every OTel metric.
	Metrics http.Handler
	// Resource describes the process on every span and metric: its
	// service name and version, and a service.instance.id that tells
	// replicas apart (OTEL_RESOURCE_ATTRIBUTES overrides each).
	Resource *resource.Resource
	// Exporting names the trace exporter in use ("none", "otlp/grpc",
	// "otlp/http").
	Exporting string
}

// Setup builds the providers. Spans are exported over OTLP when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// (protocol from OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL, grpc by default) and
// not at all otherwise; OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true
// turn export off. Sampling follows OTEL_TRACES_SAMPLER.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(cfg.ServiceName), semconv.ServiceVersion(cfg.Version),
			semconv.ServiceInstanceID(uuid.NewString())),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry resource (check OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}

	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	exporting := "none"
	if exportTraces(getenv) {
		proto := firstNonEmpty(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "grpc")
		var exp sdktrace.SpanExporter
		switch proto {
		case "grpc":
			exp, err = otlptracegrpc.New(ctx)
			exporting = "otlp/grpc"
		case "http/protobuf":
			exp, err = otlptracehttp.New(ctx)
			exporting = "otlp/http"
		default:
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported: use grpc or http/protobuf", proto)
		}
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	for _, sp := range cfg.SpanProcessors {
		opts = append(opts, sdktrace.WithSpanProcessor(sp))
	}
	tp := sdktrace.NewTracerProvider(opts...)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	promExp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(promExp))

	return &Telemetry{
		TracerProvider: tp,
		MeterProvider:  mp,
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		Metrics:        promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
		Resource:       res,
		Exporting:      exporting,
	}, nil
}

func exportTraces(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// SetGlobal installs the providers as the process-wide defaults, for
// libraries that only look there.
func (t *Telemetry) SetGlobal() {
	otel.SetTracerProvider(t.TracerProvider)
	otel.SetMeterProvider(t.MeterProvider)
	otel.SetTextMapPropagator(t.Propagator)
}

// SetGlobalMeter installs only the meter provider as the process-wide
// default: platform/storage measures every store's transactions on it.
// The tracer provider and propagator stay explicit, so a client in the
// same process (a test, the CLI) does not trace into a server's provider.
func (t *Telemetry) SetGlobalMeter() { otel.SetMeterProvider(t.MeterProvider) }

// Meter returns a meter of the process's provider.
func (t *Telemetry) Meter(name string) metric.Meter { return t.MeterProvider.Meter(name) }

// Tracer returns a tracer of the process's provider.
func (t *Telemetry) Tracer(name string) trace.Tracer { return t.TracerProvider.Tracer(name) }

// Shutdown flushes and stops the providers.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	return errors.Join(t.TracerProvider.Shutdown(ctx), t.MeterProvider.Shutdown(ctx))
}
