package avro_test

import (
	"encoding/json"
	"testing"

	hamba "github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/interop/avro"
)

// fuzzSchemas are the schemas FuzzDecode's payloads are read with: every
// type and logical type the decoder maps, nested records, arrays, maps,
// unions with null and without.
var fuzzSchemas = []string{
	orderSchema,
	`{"type":"record","name":"R","fields":[
	  {"name":"i","type":"int"},{"name":"f","type":"float"},{"name":"d","type":"double"},{"name":"b","type":"boolean"},
	  {"name":"by","type":"bytes"},{"name":"fx","type":{"type":"fixed","name":"F","size":4}},
	  {"name":"m","type":{"type":"map","values":["null","string"]}},
	  {"name":"u","type":["null","int","string"]},
	  {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
	  {"name":"t","type":{"type":"int","logicalType":"time-millis"}},
	  {"name":"dec","type":{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":18,"scale":4}},
	  {"name":"nested","type":["null",{"type":"record","name":"N","fields":[{"name":"xs","type":{"type":"array","items":"long"}}]}]}
	]}`,
}

// FuzzDecode decodes arbitrary payloads: the decoder returns JSON or an
// error, never panics, and what it returns is a JSON object.
func FuzzDecode(f *testing.F) {
	decoders := make([]*avro.Decoder, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		d, err := avro.NewDecoder(s)
		if err != nil {
			f.Fatal(err)
		}
		decoders[i] = d
	}
	s, err := avro.Parse(fuzzSchemas[1])
	if err != nil {
		f.Fatal(err)
	}
	valid, err := hamba.Marshal(s, map[string]any{
		"i": 1, "f": float32(1.5), "d": 2.5, "b": true, "by": []byte{1, 2}, "fx": [4]byte{1, 2, 3, 4},
		"m": map[string]any{"k": map[string]any{"string": "v"}, "n": nil}, "u": map[string]any{"int": 7},
		"ts": int64(1700000000000000), "t": int32(1000), "dec": [8]byte{0, 0, 0, 0, 0, 0, 0x30, 0x39},
		"nested": map[string]any{"N": map[string]any{"xs": []int64{1, -1}}},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(1), valid)
	f.Add(uint8(0), []byte{})
	f.Add(uint8(0), []byte{0x0a, 'O', 'R', 'D', '-', '1', 0x00, 0x02})
	// An array that claims far more items than the payload holds.
	f.Add(uint8(1), append(valid[:len(valid)-4], 0xfe, 0xff, 0xff, 0xff, 0x0f))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		out, err := decoders[int(which)%len(decoders)].Decode(data)
		if err != nil {
			if out != nil {
				t.Fatalf("Decode returned both a record and an error: %s, %v", out, err)
			}
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(out, &obj); err != nil {
			t.Fatalf("Decode returned %q, not a JSON object: %v", out, err)
		}
	})
}

// FuzzImport imports arbitrary schema texts: a contract or an error, never
// a panic; an imported schema normalizes, its normal form is its own
// normal form and imports as the same contract.
func FuzzImport(f *testing.F) {
	for _, s := range fuzzSchemas {
		f.Add(s)
	}
	f.Add(`{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`)
	f.Add(`{"type":"record","name":"E","fields":[{"name":"e","type":{"type":"enum","name":"S","symbols":["A","B"],"default":"A"}}]}`)
	f.Add(`["null","string"]`)
	f.Add(`{"type":"record","name":"X","fields":[{"name":"a","type":"nonsense"}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		res, err := avro.Import([]byte(text), avro.ImportOptions{Subject: "fuzz.value", Owner: "team-fuzz"})
		if err != nil {
			return
		}
		if res == nil || res.Contract == nil {
			t.Fatalf("Import(%q) returned no contract and no error", text)
		}
		norm, err := avro.Normalize(text)
		if err != nil {
			t.Fatalf("Import accepted %q but Normalize refuses it: %v", text, err)
		}
		if norm2, err := avro.Normalize(norm); err != nil || norm2 != norm {
			t.Fatalf("normal form is not stable: %q then %q (%v)", norm, norm2, err)
		}
		again, err := avro.Import([]byte(norm), avro.ImportOptions{Subject: "fuzz.value", Owner: "team-fuzz"})
		if err != nil || !proto.Equal(again.Contract, res.Contract) {
			t.Fatalf("the normal form %q imports otherwise than %q: %v", norm, text, err)
		}
	})
}
