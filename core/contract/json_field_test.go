package contract_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// TestJSONFieldYAML: a JSON field is written as type JSON with its
// constraints and read back the same, and it validates.
func TestJSONFieldYAML(t *testing.T) {
	t.Parallel()
	src := "subject: t.json\nowner: team\nfields:\n" +
		"  - {name: id, type: INT64, required: true, key: true}\n" +
		"  - {name: v, type: JSON, min: 1, max_length: 3, pattern: '^a', items: {type: INT64}, fields: [{name: a, type: STRING}]}\n"
	c := mustLoad(t, []byte(src), "t.yaml")
	if p := contract.Validate(c); len(p) > 0 {
		t.Fatalf("problems: %v", p)
	}
	out, back := roundTrip(t, c, "out.yaml")
	if !strings.Contains(string(out), "type: FIELD_TYPE_JSON") {
		t.Errorf("written as\n%s\nwant type: FIELD_TYPE_JSON", out)
	}
	if !proto.Equal(c, back) {
		t.Errorf("read back\n%v\nwant\n%v", back, c)
	}
	if got := c.GetFields()[1].GetType(); got != contractv1.FieldType_FIELD_TYPE_JSON {
		t.Errorf("type %v, want JSON", got)
	}
}
