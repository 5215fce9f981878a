package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// MarshalProto encodes m as protojson with o does, except for numbers:
// protojson leaves out a number that is 0 (a match rate of 0 reads as
// if there were none) and writes NaN and infinities as strings ("NaN").
// Here every number field without presence is written, 0 included, a
// 64-bit integer as a JSON number (2500, not "2500"), and a NaN or
// infinity as null: the value is not defined.
func MarshalProto(o protojson.MarshalOptions, m proto.Message) ([]byte, error) {
	multiline, indent := o.Multiline, o.Indent
	o.Multiline, o.Indent = false, ""
	b, err := o.Marshal(m)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := readJSON(dec)
	if err != nil {
		return nil, fmt.Errorf("re-read protojson output: %w", err)
	}
	if obj, ok := v.(*jsonObject); ok {
		fixNumbers(obj, m.ProtoReflect(), o.UseProtoNames)
	}
	var out bytes.Buffer
	writeJSON(&out, v)
	if !multiline {
		return out.Bytes(), nil
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, out.Bytes(), "", cmpOr(indent, "  ")); err != nil {
		return nil, err
	}
	return ind.Bytes(), nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// jsonObject is a JSON object that keeps its keys in order.
type jsonObject struct {
	keys []string
	vals map[string]any
}

func (o *jsonObject) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// readJSON reads one value: *jsonObject, []any, json.Number, string,
// bool or nil.
func readJSON(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := &jsonObject{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := readJSON(dec)
				if err != nil {
					return nil, err
				}
				obj.set(k, v)
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := readJSON(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return tok, nil
	}
}

func writeJSON(w *bytes.Buffer, v any) {
	switch t := v.(type) {
	case *jsonObject:
		w.WriteString("{")
		for i, k := range t.keys {
			if i > 0 {
				w.WriteString(",")
			}
			kb, _ := json.Marshal(k)
			w.Write(kb)
			w.WriteString(":")
			writeJSON(w, t.vals[k])
		}
		w.WriteString("}")
	case []any:
		w.WriteString("[")
		for i, e := range t {
			if i > 0 {
				w.WriteString(",")
			}
			writeJSON(w, e)
		}
		w.WriteString("]")
	case json.Number:
		w.WriteString(string(t))
	default:
		b, _ := json.Marshal(t)
		w.Write(b)
	}
}

func isNumber(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return false
	}
	return true
}

func is64(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return true
	}
	return false
}

// number is a number field's JSON value: a 64-bit integer, which
// protojson writes as a string ("2500"), as the number it is, and NaN or
// an infinity as null.
func number(k protoreflect.Kind, v any) any {
	if s, ok := v.(string); ok && is64(k) {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return json.Number(s)
		}
		if _, err := strconv.ParseUint(s, 10, 64); err == nil {
			return json.Number(s)
		}
	}
	return notANumber(v)
}

// notANumber turns protojson's "NaN", "Infinity" and "-Infinity" into null.
func notANumber(v any) any {
	if s, ok := v.(string); ok && (s == "NaN" || s == "Infinity" || s == "-Infinity") {
		return nil
	}
	return v
}

// fixNumbers walks obj beside the message it encodes.
func fixNumbers(obj *jsonObject, m protoreflect.Message, protoNames bool) {
	md := m.Descriptor()
	if md.FullName().Parent() == "google.protobuf" {
		return // well-known types have JSON forms of their own
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		name := fd.JSONName()
		if protoNames {
			name = string(fd.Name())
		}
		v, present := obj.vals[name]
		switch {
		case fd.IsMap():
			mv, ok := v.(*jsonObject)
			if !ok {
				continue
			}
			val := fd.MapValue()
			for _, k := range mv.keys {
				switch {
				case val.Kind() == protoreflect.MessageKind:
					// Only string keys read back as they are written.
					if sub, ok := mv.vals[k].(*jsonObject); ok && fd.MapKey().Kind() == protoreflect.StringKind {
						fixNumbers(sub, m.Get(fd).Map().Get(protoreflect.ValueOfString(k).MapKey()).Message(), protoNames)
					}
				case isNumber(val.Kind()):
					mv.vals[k] = number(val.Kind(), mv.vals[k])
				}
			}
		case fd.IsList():
			arr, ok := v.([]any)
			if !ok {
				continue
			}
			list := m.Get(fd).List()
			for j := range arr {
				switch {
				case fd.Kind() == protoreflect.MessageKind && j < list.Len():
					if sub, ok := arr[j].(*jsonObject); ok {
						fixNumbers(sub, list.Get(j).Message(), protoNames)
					}
				case isNumber(fd.Kind()):
					arr[j] = number(fd.Kind(), arr[j])
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			if sub, ok := v.(*jsonObject); ok && m.Has(fd) {
				fixNumbers(sub, m.Get(fd).Message(), protoNames)
			}
		case isNumber(fd.Kind()):
			switch {
			case present:
				obj.vals[name] = number(fd.Kind(), v)
			case fd.HasPresence():
				// Unset, and known to be: leave it out.
			default:
				obj.set(name, json.Number("0"))
			}
		}
	}
}
