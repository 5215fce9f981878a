package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seamdata/seam/core/lexical"
)

// Plain turns a contract (or canonical model, or any message of a Seam
// document) into plain values for YAML or JSON as a person writes them:
// field names as in the protos, enum values by name, and 64-bit integers
// as numbers, not the strings protojson writes for them, so what Seam
// writes, Load reads back.
func Plain(m proto.Message) (any, error) {
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return plainMessage(v, m.ProtoReflect().Descriptor())
}

// MarshalYAML writes m as one YAML document Load reads back.
func MarshalYAML(m proto.Message) ([]byte, error) {
	v, err := Plain(m)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(v)
}

func plainMessage(v any, md protoreflect.MessageDescriptor) (any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	for k, x := range obj {
		fd := md.Fields().ByName(protoreflect.Name(k))
		if fd == nil {
			continue // well-known types (Struct, Duration) keep protojson's form
		}
		var err error
		switch {
		case fd.IsMap():
			m, _ := x.(map[string]any)
			for mk, mv := range m {
				if m[mk], err = plainSingle(mv, fd.MapValue()); err != nil {
					return nil, err
				}
			}
		case fd.IsList():
			l, _ := x.([]any)
			for i := range l {
				if l[i], err = plainSingle(l[i], fd); err != nil {
					return nil, err
				}
			}
		default:
			if obj[k], err = plainSingle(x, fd); err != nil {
				return nil, err
			}
		}
	}
	return obj, nil
}

func plainSingle(v any, fd protoreflect.FieldDescriptor) (any, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if fd.Message().FullName().Parent() == "google.protobuf" {
			return numbers(v), nil
		}
		return plainMessage(v, fd.Message())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return integer(v, fd, func(s string) (any, error) { return strconv.ParseInt(s, 10, 64) })
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return integer(v, fd, func(s string) (any, error) { return strconv.ParseUint(s, 10, 64) })
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if n, ok := v.(json.Number); ok {
			return n.Float64()
		}
		if s, ok := v.(string); ok {
			if f, ok := lexical.ParseNonFinite([]byte(s)); ok {
				return f, nil
			}
		}
		return v, nil
	}
	return v, nil
}

func integer(v any, fd protoreflect.FieldDescriptor, parse func(string) (any, error)) (any, error) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	default:
		return v, nil
	}
	n, err := parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a whole number: %w", fd.Name(), s, err)
	}
	return n, nil
}

// numbers turns the json.Numbers inside a well-known type's value into
// float64 or int64, as YAML should show them.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}
