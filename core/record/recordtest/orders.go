// Package recordtest provides shop.orders records for tests, benchmarks,
// the demo and the bench command: one writer of the record (Order), the
// generated batches built on it, and the reference fields with a
// constraint of every kind for decoding and check tests. Every record it
// writes passes core/examples' shop.orders v1.
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
		{Name: "status", Type: contractv1.FieldType_FIELD_TYPE_STRING, Enum: []string{"placed", "paid", "shipped", "cancelled"}},
		{Name: "created_at", Type: contractv1.FieldType_FIELD_TYPE_TIMESTAMP, Required: true},
		{Name: "country", Type: contractv1.FieldType_FIELD_TYPE_STRING, MinLength: i64(2), MaxLength: i64(2)},
		{Name: "items", Type: contractv1.FieldType_FIELD_TYPE_INT32, Min: f64(1), Max: f64(1000)},
		{Name: "discount", Type: contractv1.FieldType_FIELD_TYPE_DOUBLE, Min: f64(0), Max: f64(1)},
		{Name: "channel", Type: contractv1.FieldType_FIELD_TYPE_STRING, Enum: []string{"web", "app", "store"}},
		{Name: "email", Type: contractv1.FieldType_FIELD_TYPE_STRING, MaxLength: i64(254), Pattern: "^[^@ ]+@[^@ ]+$"},
		{Name: "coupon", Type: contractv1.FieldType_FIELD_TYPE_STRING, MaxLength: i64(32)},
	}
}

// OrderSchema returns the record schema of OrderFields. The fields are
// fixed and valid, so it panics only if this package is broken.
func OrderSchema() *record.Schema {
	s, err := record.NewSchema(OrderFields())
	if err != nil {
		panic(fmt.Sprintf("recordtest: the shop.orders fields make no schema: %v", err))
	}
	return s
}

var (
	currencies = []string{"USD", "EUR", "GBP"}
	statuses   = []string{"placed", "paid", "shipped", "cancelled"}
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

// Order is one shop.orders record. Generators pick the values their story
// needs and write them with AppendJSON, so the record's shape lives in one
// place.
type Order struct {
	// Number is the order number: order_id is "ORD-" and ten digits.
	Number int
	// Customer is customer_id: an integer (legacy-int), a string (a UUID of
	// the new customer service), or nil to leave the field out.
	Customer  any
	Amount    float64
	Currency  string // default EUR
	Status    string // default paid
	CreatedAt string // RFC 3339; default 2026-03-01T10:00:00Z
	Country   string // default DE
	Items     int    // default 1
	Discount  float64
	Channel   string // default web
	Email     string // "" leaves it out
	Coupon    string // "" writes null
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// AppendJSON appends the order as one JSON object.
func (o Order) AppendJSON(dst []byte) []byte {
	dst = fmt.Appendf(dst, `{"order_id":"ORD-%010d",`, o.Number)
	switch c := o.Customer.(type) {
	case nil:
	case string:
		dst = fmt.Appendf(dst, `"customer_id":%q,`, c)
	default:
		dst = fmt.Appendf(dst, `"customer_id":%d,`, c)
	}
	dst = fmt.Appendf(dst, `"amount":%s,"currency":%q,"status":%q,"created_at":%q,"country":%q,"items":%d,"discount":%s,"channel":%q,`,
		strconv.FormatFloat(o.Amount, 'f', -1, 64), or(o.Currency, "EUR"), or(o.Status, "paid"), or(o.CreatedAt, "2026-03-01T10:00:00Z"),
		or(o.Country, "DE"), max(o.Items, 1), strconv.FormatFloat(o.Discount, 'f', -1, 64), or(o.Channel, "web"))
	if o.Email != "" {
		dst = fmt.Appendf(dst, `"email":%q,`, o.Email)
	}
	if o.Coupon == "" {
		return append(dst, `"coupon":null}`...)
	}
	return fmt.Appendf(dst, `"coupon":%q}`, o.Coupon)
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
