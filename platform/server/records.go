package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Full names of the record messages the gateway treats specially.
const (
	recordBatchName     protoreflect.FullName = "seam.record.v1.RecordBatch"
	canonicalRecordName protoreflect.FullName = "seam.record.v1.CanonicalRecord"
)

// recordsMarshaler is the REST gateway's JSON: protojson with proto field
// names, except that records keep their numbers exactly. Records sent as
// natural JSON objects ("batch": {"objects": {"records": [...]}}) would
// become google.protobuf.Struct values, whose numbers are doubles
// (9007199254740993 would arrive as 9007199254740992, 1001.0 as 1001); the
// decoder instead hands the array's bytes on untouched, as a raw JSON
// batch, so every path judges the same number literals. The encoder
// writes canonical records, which services return as JSON bytes (base64 in
// protojson), inline as JSON objects under "object", as they were sent.
type recordsMarshaler struct {
	runtime.JSONPb
}

func newRecordsMarshaler() *recordsMarshaler {
	return &recordsMarshaler{JSONPb: runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true}}}
}

// Unmarshal decodes one JSON message.
func (m *recordsMarshaler) Unmarshal(data []byte, v any) error {
	msg, ok := v.(proto.Message)
	if !ok {
		return m.JSONPb.Unmarshal(data, v)
	}
	data, err := rawRecords(data, msg.ProtoReflect().Descriptor())
	if err != nil {
		return err
	}
	return m.UnmarshalOptions.Unmarshal(data, msg)
}

// NewDecoder decodes a stream of JSON messages (one for a unary call,
// several for a client stream).
func (m *recordsMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return jsonDecoder(r, m.Unmarshal)
}

// jsonDecoder reads one JSON value from r per Decode (io.EOF at the end)
// and hands it to unmarshal.
func jsonDecoder(r io.Reader, unmarshal func([]byte, any) error) runtime.Decoder {
	dec := json.NewDecoder(r)
	return runtime.DecoderFunc(func(v any) error {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		return unmarshal(raw, v)
	})
}

// Marshal encodes a message, or the {"result": message} wrapper of a
// server stream.
func (m *recordsMarshaler) Marshal(v any) ([]byte, error) {
	switch x := v.(type) {
	case proto.Message:
		b, err := m.MarshalOptions.Marshal(x)
		if err != nil {
			return nil, err
		}
		return inlineRecords(b, x.ProtoReflect().Descriptor())
	case map[string]any:
		out := make(map[string]json.RawMessage, len(x))
		for k, e := range x {
			b, err := m.Marshal(e)
			if err != nil {
				return nil, err
			}
			out[k] = b
		}
		return marshalJSON(out)
	}
	return m.JSONPb.Marshal(v)
}

// NewEncoder writes each value followed by the delimiter.
func (m *recordsMarshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		_, err = w.Write(m.Delimiter())
		return err
	})
}

// holds reports, once per message type, whether a message of md can
// contain a message named target.
var holds sync.Map // [2]protoreflect.FullName → bool

func contains(md protoreflect.MessageDescriptor, target protoreflect.FullName) bool {
	key := [2]protoreflect.FullName{md.FullName(), target}
	if v, ok := holds.Load(key); ok {
		return v.(bool)
	}
	found := containsWalk(md, target, map[protoreflect.FullName]bool{})
	holds.Store(key, found)
	return found
}

func containsWalk(md protoreflect.MessageDescriptor, target protoreflect.FullName, seen map[protoreflect.FullName]bool) bool {
	if md.FullName() == target {
		return true
	}
	if seen[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Message() != nil && !fd.IsMap() && containsWalk(fd.Message(), target, seen) {
			return true
		}
	}
	return false
}

// fieldOf finds a field by the JSON key protojson accepts for it: its JSON
// name or its proto name.
func fieldOf(md protoreflect.MessageDescriptor, key string) protoreflect.FieldDescriptor {
	fields := md.Fields()
	if fd := fields.ByJSONName(key); fd != nil {
		return fd
	}
	return fields.ByName(protoreflect.Name(key))
}

// rewrite walks a JSON message along its descriptor and replaces the value
// of every field of message type target with fn's result (when fn reports
// a change). Malformed JSON is returned unchanged, for protojson to report.
func rewrite(data []byte, md protoreflect.MessageDescriptor, target protoreflect.FullName, fn func([]byte) ([]byte, bool, error)) ([]byte, bool, error) {
	if !contains(md, target) {
		return data, false, nil
	}
	if md.FullName() == target {
		return fn(data)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return data, false, nil
	}
	changed := false
	for key, val := range obj {
		fd := fieldOf(md, key)
		if fd == nil || fd.Message() == nil || fd.IsMap() || !contains(fd.Message(), target) {
			continue
		}
		if fd.IsList() {
			var items []json.RawMessage
			if err := json.Unmarshal(val, &items); err != nil {
				continue
			}
			listChanged := false
			for i, item := range items {
				nv, ok, err := rewrite(item, fd.Message(), target, fn)
				if err != nil {
					return nil, false, err
				}
				if ok {
					items[i], listChanged = nv, true
				}
			}
			if listChanged {
				b, err := marshalJSON(items)
				if err != nil {
					return nil, false, err
				}
				obj[key], changed = b, true
			}
			continue
		}
		nv, ok, err := rewrite(val, fd.Message(), target, fn)
		if err != nil {
			return nil, false, err
		}
		if ok {
			obj[key], changed = nv, true
		}
	}
	if !changed {
		return data, false, nil
	}
	b, err := marshalJSON(obj)
	return b, err == nil, err
}

// rawRecords turns every record batch sent as objects into a raw JSON
// batch holding the objects' array byte for byte.
func rawRecords(data []byte, md protoreflect.MessageDescriptor) ([]byte, error) {
	out, _, err := rewrite(data, md, recordBatchName, func(batch []byte) ([]byte, bool, error) {
		var b map[string]json.RawMessage
		if err := json.Unmarshal(batch, &b); err != nil || b["objects"] == nil {
			return batch, false, nil
		}
		var objs map[string]json.RawMessage
		if err := json.Unmarshal(b["objects"], &objs); err != nil {
			return batch, false, nil
		}
		records := bytes.TrimSpace(objs["records"])
		if len(records) == 0 || records[0] != '[' || len(objs) != 1 {
			return batch, false, nil // not a list of records; protojson says what is wrong
		}
		raw, err := marshalJSON(map[string]string{"format": "FORMAT_JSON", "data": base64.StdEncoding.EncodeToString(records)})
		if err != nil {
			return nil, false, err
		}
		delete(b, "objects")
		b["raw"] = raw
		out, err := marshalJSON(b)
		return out, err == nil, err
	})
	return out, err
}

// inlineRecords writes the JSON bytes of every canonical record as an
// inline object under "object".
func inlineRecords(data []byte, md protoreflect.MessageDescriptor) ([]byte, error) {
	out, _, err := rewrite(data, md, canonicalRecordName, func(rec []byte) ([]byte, bool, error) {
		var r map[string]json.RawMessage
		if err := json.Unmarshal(rec, &r); err != nil || r["json"] == nil {
			return rec, false, nil
		}
		var enc string
		if err := json.Unmarshal(r["json"], &enc); err != nil {
			return nil, false, fmt.Errorf("canonical record: json is not a base64 string: %w", err)
		}
		body, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, false, fmt.Errorf("canonical record: json is not base64: %w", err)
		}
		if !json.Valid(body) {
			return nil, false, fmt.Errorf("canonical record %s: its JSON body is not valid JSON", r["record_id"])
		}
		delete(r, "json")
		r["object"] = body
		out, err := marshalJSON(r)
		return out, err == nil, err
	})
	return out, err
}

// marshalJSON encodes without escaping <, > and &, so record text keeps
// its bytes.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
