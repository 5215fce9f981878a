package postgres

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// PostgreSQL type OIDs the source maps to contract types. Every other type
// travels as its text form in a STRING field, which loses nothing.
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidOID         = 26
	oidFloat4      = 700
	oidFloat8      = 701
	oidBPChar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestampTZ = 1184
	oidNumeric     = 1700
	oidUUID        = 2950
)

// fieldType is the contract type of a column of type oid.
func fieldType(oid uint32) contractv1.FieldType {
	switch oid {
	case oidBool:
		return contractv1.FieldType_FIELD_TYPE_BOOL
	case oidInt2, oidInt4:
		return contractv1.FieldType_FIELD_TYPE_INT32
	case oidInt8, oidOID:
		return contractv1.FieldType_FIELD_TYPE_INT64
	case oidFloat4:
		return contractv1.FieldType_FIELD_TYPE_FLOAT
	case oidFloat8:
		return contractv1.FieldType_FIELD_TYPE_DOUBLE
	case oidNumeric:
		return contractv1.FieldType_FIELD_TYPE_DECIMAL
	case oidDate:
		return contractv1.FieldType_FIELD_TYPE_DATE
	case oidTimestamp, oidTimestampTZ:
		return contractv1.FieldType_FIELD_TYPE_TIMESTAMP
	case oidUUID:
		return contractv1.FieldType_FIELD_TYPE_UUID
	}
	return contractv1.FieldType_FIELD_TYPE_STRING
}

// maxLength is the declared length of a varchar(n) or char(n) column, 0
// when unbounded. typmod is the column's atttypmod.
func maxLength(oid uint32, typmod int32) int64 {
	if (oid == oidVarchar || oid == oidBPChar) && typmod >= 4 {
		return int64(typmod - 4)
	}
	return 0
}

// numericDigits are the precision and scale of a numeric(p, s) column;
// ok is false for an unbounded numeric, and for a negative scale
// (PostgreSQL 15's numeric(3, -2)), which a contract cannot state.
func numericDigits(oid uint32, typmod int32) (precision, scale int32, ok bool) {
	if oid != oidNumeric || typmod < 4 {
		return 0, 0, false
	}
	m := typmod - 4
	precision, scale = (m>>16)&0xffff, m&0x7ff
	if scale&0x400 != 0 {
		return 0, 0, false // negative scale (11-bit two's complement)
	}
	return precision, scale, true
}

// targetType is the PostgreSQL type of a canonical field in the replica.
func targetType(t contractv1.FieldType) string {
	switch t {
	case contractv1.FieldType_FIELD_TYPE_INT32:
		return "integer"
	case contractv1.FieldType_FIELD_TYPE_INT64:
		return "bigint"
	case contractv1.FieldType_FIELD_TYPE_FLOAT:
		return "real"
	case contractv1.FieldType_FIELD_TYPE_DOUBLE:
		return "double precision"
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		return "boolean"
	case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		return "timestamp with time zone"
	case contractv1.FieldType_FIELD_TYPE_DATE:
		return "date"
	case contractv1.FieldType_FIELD_TYPE_UUID:
		return "uuid"
	case contractv1.FieldType_FIELD_TYPE_DECIMAL:
		return "numeric"
	case contractv1.FieldType_FIELD_TYPE_OBJECT, contractv1.FieldType_FIELD_TYPE_ARRAY, contractv1.FieldType_FIELD_TYPE_JSON:
		return "jsonb"
	}
	return "text"
}

// appendJSON appends the JSON form, under the contract's type t, of a
// column value in PostgreSQL's text output (sessions run with DateStyle ISO
// and TimeZone UTC). A value the type cannot carry as a JSON number goes
// as a JSON string: a real's or double's NaN, Infinity and -Infinity as
// exactly those strings, which FLOAT and DOUBLE fields take (core/lexical's
// NonFiniteName, protobuf's JSON spelling); anything else (a numeric NaN,
// an infinite date) for the gate's type check to refuse by name instead of
// it being changed here.
func appendJSON(dst []byte, t contractv1.FieldType, text []byte) []byte {
	switch t {
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64:
		if isInteger(text) {
			return append(dst, text...)
		}
	case contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE:
		if _, err := strconv.ParseFloat(string(text), 64); err == nil && isNumberLiteral(text) {
			return append(dst, text...)
		}
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		switch string(text) {
		case "t", "true":
			return append(dst, "true"...)
		case "f", "false":
			return append(dst, "false"...)
		}
	case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		return appendString(dst, rfc3339(text))
	}
	return appendString(dst, text)
}

func isInteger(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (len(b) > 1 && b[0] == '0') {
		// A leading zero is no JSON number; PostgreSQL never prints one.
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isNumberLiteral reports whether b is a JSON number (PostgreSQL prints
// NaN and Infinity, which JSON cannot carry).
func isNumberLiteral(b []byte) bool {
	// JSON's number grammar is stricter than ParseFloat's: no "+", no
	// leading zeros, no "1." or ".5".
	return len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9') && json.Valid(b)
}

// rfc3339 turns PostgreSQL's ISO output of a timestamp ("2024-01-02
// 03:04:05.123456", with "+00", "+05:30" or "-08" for timestamptz) into
// RFC 3339. A timestamp without zone is read as UTC. Anything else (BC
// dates, infinity) is returned unchanged, for the gate to refuse by name.
func rfc3339(b []byte) []byte {
	if len(b) < 19 || b[10] != ' ' {
		return b
	}
	out := make([]byte, 0, len(b)+6)
	out = append(out, b[:10]...)
	out = append(out, 'T')
	rest := b[11:]
	i := 0
	for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == ':' || rest[i] == '.') {
		i++
	}
	out = append(out, rest[:i]...)
	zone := rest[i:]
	switch {
	case len(zone) == 0:
		out = append(out, 'Z')
	case (zone[0] == '+' || zone[0] == '-') && len(zone) == 3:
		if zone[1] == '0' && zone[2] == '0' {
			out = append(out, 'Z')
		} else {
			out = append(out, zone...)
			out = append(out, ":00"...)
		}
	case (zone[0] == '+' || zone[0] == '-') && len(zone) == 6 && zone[3] == ':':
		out = append(out, zone...)
	default:
		return b
	}
	return out
}

// appendString appends s as a JSON string. Invalid UTF-8 (text columns of
// a SQL_ASCII database) is kept visible as U+FFFD rather than dropped.
func appendString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// lsnText prints an LSN the way PostgreSQL does, as two hex halves.
func lsnText(lsn uint64) string { return fmt.Sprintf("%X/%X", lsn>>32, uint32(lsn)) }

// lsnName is an LSN as it appears in the gate's partition and batch
// names, which may not hold a path separator: 0-1DC43A0 for 0/1DC43A0.
func lsnName(lsn uint64) string { return fmt.Sprintf("%X-%X", lsn>>32, uint32(lsn)) }
