package avro_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/seamdata/seam/core/interop"
	"github.com/seamdata/seam/core/interop/avro"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

const orderSchema = `{
  "type": "record", "name": "Order", "namespace": "shop",
  "fields": [
    {"name": "order_id", "type": "string"},
    {"name": "customer_id", "type": ["null", "long"], "default": null},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "placed_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [{"name": "sku", "type": "string"}]}}}
  ]
}`

func TestImportMapsAvroTypes(t *testing.T) {
	t.Parallel()
	res, err := avro.Import([]byte(orderSchema), avro.ImportOptions{Subject: "orders.value", Owner: "team-shop"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		typ      contractv1.FieldType
		required bool
	}{
		"order_id":    {contractv1.FieldType_FIELD_TYPE_STRING, true},
		"customer_id": {contractv1.FieldType_FIELD_TYPE_INT64, false},
		"status":      {contractv1.FieldType_FIELD_TYPE_STRING, true},
		"placed_at":   {contractv1.FieldType_FIELD_TYPE_TIMESTAMP, true},
		"day":         {contractv1.FieldType_FIELD_TYPE_DATE, true},
		"amount":      {contractv1.FieldType_FIELD_TYPE_DECIMAL, true},
		"ref":         {contractv1.FieldType_FIELD_TYPE_UUID, true},
		"lines":       {contractv1.FieldType_FIELD_TYPE_ARRAY, true},
	}
	c := res.Contract
	if len(c.GetFields()) != len(want) {
		t.Fatalf("got %d fields, want %d", len(c.GetFields()), len(want))
	}
	for _, f := range c.GetFields() {
		w, ok := want[f.GetName()]
		if !ok || f.GetType() != w.typ || f.GetRequired() != w.required {
			t.Errorf("field %s: got %s required=%v, want %s required=%v", f.GetName(), f.GetType(), f.GetRequired(), w.typ, w.required)
		}
		switch f.GetName() {
		case "amount":
			if f.GetPrecision() != 10 || f.GetScale() != 2 {
				t.Errorf("amount: got decimal(%d, %d), want decimal(10, 2)", f.GetPrecision(), f.GetScale())
			}
		case "status":
			if strings.Join(f.GetEnum(), ",") != "NEW,PAID" {
				t.Errorf("status: got enum %v, want NEW,PAID", f.GetEnum())
			}
		case "lines":
			if it := f.GetItems(); it.GetType() != contractv1.FieldType_FIELD_TYPE_OBJECT || len(it.GetFields()) != 1 {
				t.Errorf("lines: got items %v, want an OBJECT with sku", it)
			}
		}
	}
	// The default of customer_id is reported dropped: strict refuses it.
	_, err = avro.Import([]byte(orderSchema), avro.ImportOptions{Subject: "orders.value", Owner: "team-shop", Strict: true})
	var loss *interop.LossError
	if !errors.As(err, &loss) {
		t.Fatalf("strict import: got %v, want a LossError for the dropped default", err)
	}
}

func TestImportRefuses(t *testing.T) {
	t.Parallel()
	for name, schema := range map[string]string{
		"not a record": `"string"`,
		"wide union":   `{"type":"record","name":"R","fields":[{"name":"x","type":["null","string","long"]}]}`,
		"not avro":     `{"type":"record","name":"R","fields":[{"name":"x","type":"nonsense"}]}`,
		"invalid json": `{"type":`,
	} {
		if _, err := avro.Import([]byte(schema), avro.ImportOptions{Subject: "s", Owner: "o"}); err == nil {
			t.Errorf("%s: imported, want an error", name)
		}
	}
}

func TestDecodeGivesSeamJSON(t *testing.T) {
	t.Parallel()
	s, err := avro.Parse(orderSchema)
	if err != nil {
		t.Fatal(err)
	}
	placed := time.Date(2026, 10, 1, 12, 30, 0, 0, time.UTC)
	in := map[string]any{
		"order_id": "ORD-1", "customer_id": map[string]any{"long": int64(42)}, "status": "PAID",
		"placed_at": placed, "day": time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
		"amount": big.NewRat(12345, 100), "ref": "6f1c2a9e-5b7d-4c1e-9a3b-2d4e6f8a0b1c",
		"lines": []any{map[string]any{"sku": "A"}},
	}
	data, err := hamba.Marshal(s, in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := avro.NewDecoder(orderSchema)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"order_id": "ORD-1", "customer_id": 42.0, "status": "PAID", "placed_at": "2026-10-01T12:30:00Z",
		"day": "2026-10-01", "amount": "123.45", "ref": "6f1c2a9e-5b7d-4c1e-9a3b-2d4e6f8a0b1c"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %v (%T), want %v", k, got[k], got[k], w)
		}
	}
	if _, err := d.Decode(data[:len(data)-3]); err == nil {
		t.Error("a truncated payload decoded, want an error")
	}
	if _, err := d.Decode(append(data, 0, 0)); err == nil {
		t.Error("a payload with bytes left over decoded, want an error")
	}
}
