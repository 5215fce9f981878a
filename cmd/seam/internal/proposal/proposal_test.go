package proposal

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// A held record kept truncated is left out of what a proposal infers
// from, and the proposal says how many were.
func TestTruncatedRecordsLeftOut(t *testing.T) {
	t.Parallel()
	g := &Gathered{Subject: "fleet.trips"}
	g.addHeld([]*gatev1.QuarantinedRecord{{Id: "a", Raw: []byte(`{"x":1}`)}, {Id: "b", Raw: []byte(`{"x":"`), RawTruncated: true}, {Id: "c", Raw: []byte(`{"x":2}`)}})
	var ids []string
	for _, r := range g.Held {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"a", "c"}) || g.Truncated != 1 {
		t.Fatalf("held = %v, truncated %d; want a and c, 1 truncated", ids, g.Truncated)
	}
	g.describe()
	found := false
	for _, c := range g.Context {
		found = found || strings.Contains(c, "Left out 1 held records larger than the quarantine keeps")
	}
	if !found {
		t.Errorf("context = %q, want it to say the truncated record was left out", g.Context)
	}
}

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
