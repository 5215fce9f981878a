package idpack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/idpack"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

func TestPackAndStrings(t *testing.T) {
	t.Parallel()
	ids := []string{"SN-000001", "", "Zürich", "0b9e5c8e-3f0d-4a4e-9d43-1f3c2a6f6b01"}
	p := idpack.Pack(ids)
	got, err := idpack.Strings(p)
	if err != nil || !slices.Equal(got, ids) {
		t.Fatalf("Strings(Pack(%q)) = %q, %v", ids, got, err)
	}
	bytes := [][]byte{[]byte("a"), []byte("bc")}
	if p := idpack.Pack(bytes); string(p.GetData()) != "abc" || !slices.Equal(p.GetEnds(), []uint32{1, 3}) {
		t.Fatalf("Pack of byte slices = %q %v", p.GetData(), p.GetEnds())
	}
	if got, err := idpack.Strings(nil); err != nil || len(got) != 0 {
		t.Fatalf("Strings(nil) = %q, %v", got, err)
	}
	for _, bad := range []*idmapv1.PackedIds{
		{Data: []byte("abc"), Ends: []uint32{2, 1}},
		{Data: []byte("abc"), Ends: []uint32{4}},
	} {
		if _, err := idpack.Strings(bad); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("Strings(%v) = %v, want an error naming the id outside the data", bad, err)
		}
	}
}
