// Package recordtest provides the reference shop.orders contract fields and
// generated batches for tests and benchmarks of record decoding and checks.
package recordtest

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// OrderFields returns the 12 fields of the shop.orders reference contract
// (DESIGN.md), with a constraint of every kind so each implied check runs.
func OrderFields() []*contractv1.Field {
	return []*contractv1.Field{
		{Name: "order_id", Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true, Key: true, Pattern: "^ORD-[0-9]{10}$"},
		{Name: "customer_id", Type: contractv1.FieldType_FIELD_TYPE_INT64, Required: true,
			Identifier: &contractv1.Identifier{Namespace: "customer", Format: "legacy-int"}},
		{Name: "amount", Type: contractv1.FieldType_FIELD_TYPE_DOUBLE, Required: true, Min: f64(0), Max: f64(1e6)},
		{Name: "currency", Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true, Enum: []string{"USD", "EUR", "GBP"}},
		{Name: "status", Type: contractv1.FieldType_FIELD_TYPE_STRING, Enum: []string{"new", "paid", "shipped", "cancelled"}},
		{Name: "created_at", Type: contractv1.FieldType_FIELD_TYPE_TIMESTAMP, Required: true},
		{Name: "country", Type: contractv1.FieldType_FIELD_TYPE_STRING, MinLength: i64(2), MaxLength: i64(2)},
		{Name: "items", Type: contractv1.FieldType_FIELD_TYPE_INT32, Min: f64(1), Max: f64(1000)},
		{Name: "discount", Type: contractv1.FieldType_FIELD_TYPE_DOUBLE, Min: f64(0), Max: f64(1)},
		{Name: "channel", Type: contractv1.FieldType_FIELD_TYPE_STRING, Enum: []string{"web", "app", "store"}},
		{Name: "email", Type: contractv1.FieldType_FIELD_TYPE_STRING, MaxLength: i64(254), Pattern: "^[^@ ]+@[^@ ]+$"},
		{Name: "coupon", Type: contractv1.FieldType_FIELD_TYPE_STRING, MaxLength: i64(32)},
	}
}

var (
	currencies = []string{"USD", "EUR", "GBP"}
	statuses   = []string{"new", "paid", "shipped", "cancelled"}
	countries  = []string{"US", "DE", "GB", "FR"}
	channels   = []string{"web", "app", "store"}
)

// OrderJSON appends order i as one JSON object (about 250 bytes) that passes
// every check of OrderFields.
func OrderJSON(dst []byte, i int) []byte {
	dst = fmt.Appendf(dst, `{"order_id":"ORD-%010d","customer_id":%d,"amount":%d.%02d,"currency":%q,`,
		i, 100000+i%50000, 20+i%180, i%100, currencies[i%3])
	dst = fmt.Appendf(dst, `"status":%q,"created_at":"2025-03-%02dT%02d:%02d:%02dZ","country":%q,"items":%d,`,
		statuses[i%4], 1+i%28, i%24, i%60, (i*7)%60, countries[i%4], 1+i%9)
	coupon := "null"
	if i%5 == 0 {
		coupon = strconv.Quote("SPRING" + strconv.Itoa(i%100))
	}
	dst = fmt.Appendf(dst, `"discount":0.%02d,"channel":%q,"email":"customer%d@example.com","coupon":%s}`,
		i%50, channels[i%3], 100000+i%50000, coupon)
	return dst
}

// OrdersNDJSON returns n orders, one per line.
func OrdersNDJSON(n int) []byte {
	var b []byte
	for i := range n {
		b = OrderJSON(b, i)
		b = append(b, '\n')
	}
	return b
}

// OrdersJSON returns n orders as one JSON array.
func OrdersJSON(n int) []byte {
	b := []byte{'['}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = OrderJSON(b, i)
	}
	return append(b, ']')
}

// CSV renders decoded records as CSV with a header of the schema's top-level
// fields; strings are quoted only when they must be.
func CSV(s *record.Schema, b *record.Batch) []byte {
	var out []byte
	var top []record.Field
	for _, f := range s.Fields() {
		if f.Parent == -1 {
			top = append(top, f)
		}
	}
	for i, f := range top {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, f.Name...)
	}
	out = append(out, '\n')
	for _, r := range b.Records {
		for i, f := range top {
			if i > 0 {
				out = append(out, ',')
			}
			v := r.Values[f.Index]
			switch v.Kind() {
			case record.KindAbsent, record.KindNull:
			case record.KindString:
				if bytes.ContainsAny(v.Bytes(), ",\"\r\n") {
					out = append(out, '"')
					out = append(out, bytes.ReplaceAll(v.Bytes(), []byte{'"'}, []byte{'"', '"'})...)
					out = append(out, '"')
				} else {
					out = append(out, v.Bytes()...)
				}
			default:
				out = record.AppendValue(out, v)
			}
		}
		out = append(out, '\n')
	}
	return out
}
