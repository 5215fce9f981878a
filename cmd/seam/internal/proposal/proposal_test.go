package proposal

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

func TestNamespacesOf(t *testing.T) {
	t.Parallel()
	ct := &contractv1.Contract{
		Fields: []*contractv1.Field{
			{Name: "a", Identifier: &contractv1.Identifier{Namespace: "customer", Format: "legacy-int"}},
			{Name: "o", Type: contractv1.FieldType_FIELD_TYPE_OBJECT, Fields: []*contractv1.Field{{Name: "m", Identifier: &contractv1.Identifier{Namespace: "merchant", Format: "x"}}}},
			{Name: "l", Type: contractv1.FieldType_FIELD_TYPE_ARRAY, Items: &contractv1.Field{Identifier: &contractv1.Identifier{Namespace: "sku", Format: "y"}}},
		},
		Mapping: &contractv1.Mapping{Fields: map[string]*contractv1.FieldMapping{"c": {From: "a", Translate: &contractv1.Translate{From: "customer/uuid", To: "account/acc"}}}},
	}
	if got, want := namespacesOf(ct), []string{"account", "customer", "merchant", "sku"}; !slices.Equal(got, want) {
		t.Errorf("namespacesOf = %q, want %q", got, want)
	}
}

// Wrap keeps a status's code and says what the call was for, without the
// transport's wording; other errors stay wrapped.
func TestWrap(t *testing.T) {
	t.Parallel()
	err := Wrap("get the active version of x", status.Error(codes.NotFound, `subject "x" not found`))
	if got := err.Error(); got != `get the active version of x: subject "x" not found` {
		t.Errorf("message = %q", got)
	}
	if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != err.Error() {
		t.Errorf("status = %v, want NotFound with the whole message", st)
	}
	plain := errors.New("disk full")
	if err := Wrap("read", plain); !errors.Is(err, plain) || err.Error() != "read: disk full" {
		t.Errorf("Wrap of a plain error = %v", err)
	}
}
