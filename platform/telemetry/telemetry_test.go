package telemetry

import (
	"context"
	"testing"

	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

func instanceID(t *testing.T, getenv func(string) string) string {
	t.Helper()
	tel, err := Setup(context.Background(), Config{ServiceName: "gate", Getenv: getenv})
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	v, ok := tel.Resource.Set().Value(semconv.ServiceInstanceIDKey)
	if !ok {
		t.Fatalf("resource %v has no %s", tel.Resource, semconv.ServiceInstanceIDKey)
	}
	return v.AsString()
}

// Each process is a replica of its own on every span and metric, unless
// the operator names it.
func TestServiceInstanceID(t *testing.T) {
	none := func(string) string { return "" }
	a, b := instanceID(t, none), instanceID(t, none)
	if a == "" || a == b {
		t.Errorf("two processes' service.instance.id = %q and %q, want two different ids", a, b)
	}
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "service.instance.id=gate-eu-1")
	if got := instanceID(t, none); got != "gate-eu-1" {
		t.Errorf("service.instance.id with OTEL_RESOURCE_ATTRIBUTES = %q, want gate-eu-1", got)
	}
}
