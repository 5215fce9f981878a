package idmap_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/storage/storagetest"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	"github.com/seamdata/seam/services/idmap"
)

// exportAll reads a whole export; it returns the pairs, the chunks and the
// generation every chunk named.
func exportAll(t *testing.T, c idmapv1.IdMapServiceClient, req *idmapv1.ExportPairsRequest) ([]*idmapv1.Pair, int, int64, error) {
	t.Helper()
	stream, err := c.ExportPairs(context.Background(), req)
	if err != nil {
		return nil, 0, 0, err
	}
	var pairs []*idmapv1.Pair
	chunks := 0
	gen := int64(-1)
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return pairs, chunks, gen, nil
		}
		if err != nil {
			return nil, 0, 0, err
		}
		if gen >= 0 && msg.GetGeneration() != gen {
			t.Fatalf("chunk %d names generation %d after %d: an export mixes snapshots", chunks, msg.GetGeneration(), gen)
		}
		gen = msg.GetGeneration()
		chunks++
		pairs = append(pairs, msg.GetPairs()...)
	}
}

// ExportPairs gives back exactly what was imported, oriented as asked,
// in chunks, from both stores; member lists come as ids.
func TestExportPairs(t *testing.T) {
	withCustomer(t, func(t *testing.T, _ string, c idmapv1.IdMapServiceClient, _ *idmap.Server) {
		var pairs [][2]string
		want := map[string]string{}
		for i := range 25_001 { // three chunks
			u := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			pairs = append(pairs, [2]string{u, strconv.Itoa(i + 1)})
			want[u] = strconv.Itoa(i + 1)
		}
		importPairs(t, c, header(false, 0), pairs)

		got, chunks, gen, err := exportAll(t, c, &idmapv1.ExportPairsRequest{Namespace: "customer", FromFormat: "uuid", ToFormat: "legacy-int"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || chunks != 3 || gen != 1 {
			t.Fatalf("export: %d pairs in %d chunks of generation %d, want %d in 3 of generation 1", len(got), chunks, gen, len(want))
		}
		for _, p := range got {
			if want[p.GetFrom()] != p.GetTo() {
				t.Fatalf("exported %s→%s, imported %s→%s", p.GetFrom(), p.GetTo(), p.GetFrom(), want[p.GetFrom()])
			}
		}
		// The other way round, with a limit.
		got, _, _, err = exportAll(t, c, &idmapv1.ExportPairsRequest{Namespace: "customer", FromFormat: "legacy-int", ToFormat: "uuid", Limit: 10})
		if err != nil || len(got) != 10 {
			t.Fatalf("reversed export with limit 10: %d pairs, %v", len(got), err)
		}
		for _, p := range got {
			if want[p.GetTo()] != p.GetFrom() {
				t.Fatalf("reversed export gave %s→%s, which is not an imported pair turned round", p.GetFrom(), p.GetTo())
			}
		}

		importPairs(t, c, &idmapv1.ImportHeader{Namespace: "customer", FromFormat: "legacy-int", Members: true}, [][2]string{{"7", ""}, {"8", ""}})
		got, _, _, err = exportAll(t, c, &idmapv1.ExportPairsRequest{Namespace: "customer", FromFormat: "legacy-int"})
		if err != nil || len(got) != 2 || got[0].GetTo() != "" {
			t.Fatalf("member list export: %v, %v; want two ids with to empty", got, err)
		}
	})
}

func TestExportPairsErrors(t *testing.T) {
	t.Parallel()
	c, _ := start(t, storagetest.SQLiteURL(t))
	createCustomer(t, c)
	for _, tt := range []struct {
		req  *idmapv1.ExportPairsRequest
		code codes.Code
	}{
		{&idmapv1.ExportPairsRequest{Namespace: "nope", FromFormat: "uuid", ToFormat: "legacy-int"}, codes.NotFound},
		{&idmapv1.ExportPairsRequest{Namespace: "customer", FromFormat: "uuid", ToFormat: "legacy-int"}, codes.NotFound},
		{&idmapv1.ExportPairsRequest{Namespace: "customer", FromFormat: "nope", ToFormat: "legacy-int"}, codes.InvalidArgument},
		{&idmapv1.ExportPairsRequest{Namespace: "customer", FromFormat: "uuid", ToFormat: "legacy-int", Limit: -1}, codes.InvalidArgument},
	} {
		_, _, _, err := exportAll(t, c, tt.req)
		if status.Code(err) != tt.code {
			t.Errorf("ExportPairs(%v) = %v, want %s", tt.req, err, tt.code)
		}
	}
}

// AddFormat adds a format that rules, tables and translations can use
// at once and that survives a restart; it refuses a duplicate, an invalid
// format and an unknown namespace.
func TestAddFormat(t *testing.T) {
	withCustomer(t, func(t *testing.T, url string, c idmapv1.IdMapServiceClient, srv *idmap.Server) {
		ctx := context.Background()
		f := &idmapv1.Format{Name: "cust-code", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING, Pattern: "^CUST-[0-9]{8}$"}
		resp, err := c.AddFormat(ctx, &idmapv1.AddFormatRequest{Namespace: "customer", Format: f})
		if err != nil || len(resp.GetNamespace().GetFormats()) != 4 {
			t.Fatalf("AddFormat = %v, %v; want the namespace with 4 formats", resp, err)
		}
		if _, err := c.SetRule(ctx, &idmapv1.SetRuleRequest{Namespace: "customer", Samples: []string{"42"},
			Rule: &idmapv1.Rule{FromFormat: "legacy-int", ToFormat: "cust-code", Reversible: true, Strategy: &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: "CUST-{int:08}"}}}}); err != nil {
			t.Fatalf("SetRule on the new format: %v", err)
		}
		if got := translate(t, c, "cust-code", "legacy-int", "CUST-00000042"); got.Values[0] != "42" {
			t.Errorf("translate CUST-00000042 = %v, want 42", got.Values)
		}
		for _, tt := range []struct {
			req  *idmapv1.AddFormatRequest
			code codes.Code
		}{
			{&idmapv1.AddFormatRequest{Namespace: "customer", Format: f}, codes.AlreadyExists},
			{&idmapv1.AddFormatRequest{Namespace: "customer", Format: &idmapv1.Format{Name: "Bad Name", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}}, codes.InvalidArgument},
			{&idmapv1.AddFormatRequest{Namespace: "customer", Format: &idmapv1.Format{Name: "p", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING, Pattern: "("}}, codes.InvalidArgument},
			{&idmapv1.AddFormatRequest{Namespace: "nope", Format: &idmapv1.Format{Name: "x", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}}, codes.NotFound},
		} {
			if _, err := c.AddFormat(ctx, tt.req); status.Code(err) != tt.code {
				t.Errorf("AddFormat(%v) = %v, want %s", tt.req, err, tt.code)
			}
		}
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		c2, _ := start(t, url)
		if got := translate(t, c2, "legacy-int", "cust-code", "7"); got.Values[0] != "CUST-00000007" {
			t.Errorf("after restart translate 7 = %v, want CUST-00000007", got.Values)
		}
		audit, err := c2.ListAudit(ctx, &idmapv1.ListAuditRequest{Namespace: "customer", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, a := range audit.GetRecords() {
			found = found || a.GetAction() == "add_format" && a.GetPrincipal() == "alice"
		}
		if !found {
			t.Errorf("no add_format audit record by alice: %v", audit.GetRecords())
		}
	})
}
