package record_test

import (
	"testing"

	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// TestCSVJSONField: a CSV cell of a JSON field that is one JSON value
// entirely is that value; any other text is a string, as it was sent.
func TestCSVJSONField(t *testing.T) {
	t.Parallel()
	s, err := record.NewSchema([]*contractv1.Field{
		{Name: "k", Type: contractv1.FieldType_FIELD_TYPE_STRING},
		{Name: "j", Type: contractv1.FieldType_FIELD_TYPE_JSON, Fields: []*contractv1.Field{
			{Name: "a", Type: contractv1.FieldType_FIELD_TYPE_INT64}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	data := "k,j\n" +
		"n,12.5\n" +
		"b,true\n" +
		"o,\"{\"\"a\"\": 1}\"\n" +
		"l,\"[1, \"\"x\"\"]\"\n" +
		"q,\"\"\"quoted\"\"\"\n" +
		"t,hello world\n" +
		"p,1 2\n" +
		"e,{bad\n"
	b := decode(t, s, recordv1.Format_FORMAT_CSV, []byte(data), 0)
	want := []struct {
		kind record.Kind
		text string
	}{
		{record.KindNumber, "12.5"}, {record.KindBool, "true"}, {record.KindObject, `{"a": 1}`}, {record.KindArray, `[1, "x"]`},
		{record.KindString, "quoted"}, {record.KindString, "hello world"}, {record.KindString, "1 2"}, {record.KindString, "{bad"},
	}
	if len(b.Records) != len(want) {
		t.Fatalf("got %d records, want %d", len(b.Records), len(want))
	}
	for i, w := range want {
		v := value(t, s, b.Records[i], "j")
		if v.Kind() != w.kind || (w.kind != record.KindBool && string(v.Bytes()) != w.text) {
			t.Errorf("row %d: j = %v %q, want %v %q", i+2, v.Kind(), v.Bytes(), w.kind, w.text)
		}
	}
	if a, ok := value(t, s, b.Records[2], "j.a").Int(); !ok || a != 1 {
		t.Errorf("j.a = %d %v, want the member 1", a, ok)
	}
	if v := value(t, s, b.Records[7], "j.a"); v.Kind() != record.KindAbsent {
		t.Errorf("j.a of text that is no object = %v, want absent", v.Kind())
	}
}
