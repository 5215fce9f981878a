package registry

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/storage/storagetest"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestBadConsumerNamesRefused: consumer names follow the naming rule on
// SQLite and PostgreSQL: a look-alike with a trailing space, a path, a NUL,
// a zero-width space or 2,000 characters is InvalidArgument naming the
// field, and nothing is stored; namespace/job is a valid name.
func TestBadConsumerNamesRefused(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, newFakeClock())
		e.seed(t)
		ctx := context.Background()
		declare := func(name string) error {
			_, err := e.as("team-ml").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{Name: name,
				Inputs: []*registryv1.Input{{Source: &registryv1.Input_Subject{Subject: "shop.orders"}}}}})
			return err
		}
		if err := declare("features.ltv"); err != nil {
			t.Fatal(err)
		}
		if err := declare("team-ml/nightly"); err != nil {
			t.Errorf("namespace/job: %v, want valid", err)
		}
		for _, bad := range []string{"features.ltv ", "../x", "a\x00b", "a\u200bb", strings.Repeat("c", 2000), "ns//job"} {
			err := declare(bad)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error()+detailsText(err), "consumer.name") {
				t.Errorf("consumer %.20q: %v, want InvalidArgument naming consumer.name", bad, err)
			}
			_, err = e.as("team-ml").DeleteConsumer(ctx, &registryv1.DeleteConsumerRequest{Name: bad})
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("delete consumer %.20q: %v, want InvalidArgument", bad, err)
			}
		}
		list, err := e.as("viewer").ListConsumers(ctx, &registryv1.ListConsumersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list.GetConsumers() {
			if c.GetName() != strings.TrimSpace(c.GetName()) || strings.ContainsAny(c.GetName(), "\x00\u200b") {
				t.Errorf("a bad name was stored: %q", c.GetName())
			}
		}
	})
}

func detailsText(err error) string {
	var b strings.Builder
	for _, d := range status.Convert(err).Details() {
		if s, ok := d.(interface{ String() string }); ok {
			b.WriteString(s.String())
		}
	}
	return b.String()
}
