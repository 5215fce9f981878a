package registry

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/seamdata/seam/core/interop/odcs"
	"github.com/seamdata/seam/platform/storage/storagetest"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestRegisterODCSDocument registers shop.orders v1 sent as ODCS, checks a
// JSON Schema document, and refuses a lossy document in strict mode.
func TestRegisterODCSDocument(t *testing.T) {
	e := newEnv(t, storagetest.SQLiteURL(t), newFakeClock())
	ctx := context.Background()
	if _, err := e.as("admin").RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: loadModel(t)}); err != nil {
		t.Fatal(err)
	}
	doc, _, err := odcs.Export(loadContract(t, "shop_orders_v1.yaml"), odcs.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{Document: &registryv1.ContractDocument{
		Format: registryv1.ContractFormat_CONTRACT_FORMAT_ODCS, Content: string(doc), Strict: true}})
	if err != nil {
		t.Fatalf("register ODCS: %v", err)
	}
	if v := resp.GetVersion(); v.GetSubject() != "shop.orders" || v.GetVersion() != 1 || len(v.GetContract().GetFields()) != 12 {
		t.Errorf("registered %s v%d with %d fields, want shop.orders v1 with 12", v.GetSubject(), v.GetVersion(), len(v.GetContract().GetFields()))
	}
	schema := `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
	  "properties": {"order_id": {"type": "string"}, "seller": {"type": "string"}}, "required": ["order_id"]}`
	check, err := e.as("viewer").CheckContract(ctx, &registryv1.CheckContractRequest{Document: &registryv1.ContractDocument{
		Format: registryv1.ContractFormat_CONTRACT_FORMAT_JSON_SCHEMA, Content: schema, Subject: "shop.orders", Owner: "team-checkout"}})
	if err != nil {
		t.Fatalf("check JSON Schema: %v", err)
	}
	if check.GetVerdict() != registryv1.Verdict_VERDICT_REFUSED || check.GetContract().GetSubject() != "shop.orders" {
		t.Errorf("verdict %s on %q, want REFUSED (fields removed) on shop.orders", check.GetVerdict(), check.GetContract().GetSubject())
	}
	lossy := "apiVersion: v3.1.0\nkind: DataContract\nid: x\nversion: 1.0.0\nstatus: active\nteam: {name: team-checkout}\n" +
		"schema: [{name: orders, customProperties: [{property: seamSubject, value: shop.returns}], properties: [{name: id, logicalType: string, businessName: Id}]}]\n"
	_, err = e.as("checkout").CheckContract(ctx, &registryv1.CheckContractRequest{Document: &registryv1.ContractDocument{
		Format: registryv1.ContractFormat_CONTRACT_FORMAT_ODCS, Content: lossy, Strict: true}})
	wantCode(t, err, codes.InvalidArgument)
	if got := strings.Join(fieldViolations(err), " "); !strings.Contains(got, "businessName") {
		t.Errorf("strict refusal names %q, want the dropped businessName", got)
	}
	relaxed, err := e.as("checkout").CheckContract(ctx, &registryv1.CheckContractRequest{Document: &registryv1.ContractDocument{
		Format: registryv1.ContractFormat_CONTRACT_FORMAT_ODCS, Content: lossy}})
	if err != nil {
		t.Fatal(err)
	}
	if len(relaxed.GetImportNotes()) == 0 || relaxed.GetVerdict() != registryv1.Verdict_VERDICT_ADDITIVE {
		t.Errorf("verdict %s with notes %v, want ADDITIVE with the dropped businessName noted", relaxed.GetVerdict(), relaxed.GetImportNotes())
	}
}
