package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/seamdata/seam/core/contract"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// The suite's source is a payments feed of its own, not the shop.orders of
// the examples: settlements whose merchant reference is translated to the
// canonical merchant id through an idmap lookup table, so every batch goes
// through the registry, the adapter, idmap and the gate.
const (
	subject   = "pay.settlements"
	merchants = 500
)

const settlementModel = `
name: finance.settlement
owner: team-payments
description: One settlement of a card payment to a merchant.
fields:
  - {name: settlement_id, type: STRING, required: true, key: true}
  - {name: merchant_id, type: INT64, required: true, identifier: {namespace: merchant, format: id}}
  - {name: amount, type: DOUBLE, required: true, min: 0}
  - {name: currency, type: STRING, required: true, enum: [EUR, USD, GBP]}
  - {name: settled_at, type: TIMESTAMP, required: true}
  - {name: reference, type: INT64}
`

const settlementContract = `
subject: pay.settlements
owner: team-payments
description: Settlements the acquiring bank sends, one record per settlement.
compatibility: BACKWARD
notice_period: 14d
fields:
  - {name: settlement_id, type: STRING, required: true, key: true, pattern: "^STL-[0-9]{10}$"}
  - {name: merchant_ref, type: STRING, required: true, identifier: {namespace: merchant, format: ref}}
  - {name: amount, type: DOUBLE, required: true, min: 0}
  - {name: currency, type: STRING, required: true, enum: [EUR, USD, GBP]}
  - {name: settled_at, type: TIMESTAMP, required: true, layout: RFC3339}
  - {name: reference, type: INT64}
checks:
  - {name: merchant_match, rule: "match_rate(merchant_ref, min: 0.5, baseline: 7d)", policy: ALERT}
mapping:
  canonical: finance.settlement
  fields:
    settlement_id: {from: settlement_id}
    merchant_id: {from: merchant_ref, translate: {from: merchant/ref, to: merchant/id}}
    amount: {from: amount}
    currency: {from: currency}
    settled_at: {from: settled_at}
    reference: {from: reference}
`

// setupSource registers the source, as the admin, on the cluster whose
// registry is reg and whose idmap is idm (one process under seam up).
func (c *cluster) setupSource(ctx context.Context, reg, idm *proc) error {
	regConn, err := c.conn(reg, "admin", 30*time.Second)
	if err != nil {
		return err
	}
	defer regConn.Close()
	idmConn, err := c.conn(idm, "admin", 30*time.Second)
	if err != nil {
		return err
	}
	defer idmConn.Close()
	return setup(ctx, registryv1.NewRegistryServiceClient(regConn), idmapv1.NewIdMapServiceClient(idmConn))
}

// setup registers the source on a node: the canonical model, the merchant
// namespace and its lookup table, the contract. The services may all be
// behind one address (seam up) or several.
func setup(ctx context.Context, reg registryv1.RegistryServiceClient, idm idmapv1.IdMapServiceClient) error {
	model, err := contract.LoadCanonicalModel([]byte(settlementModel), "finance_settlement.yaml")
	if err != nil {
		return err
	}
	if _, err := reg.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: model}); err != nil {
		return fmt.Errorf("register finance.settlement: %w", err)
	}
	if _, err := idm.CreateNamespace(ctx, &idmapv1.CreateNamespaceRequest{Namespace: &idmapv1.Namespace{Name: "merchant", Formats: []*idmapv1.Format{
		{Name: "ref", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING, Pattern: `^MER-[0-9]{6}$`},
		{Name: "id", Kind: idmapv1.FormatKind_FORMAT_KIND_INT},
	}}}); err != nil {
		return fmt.Errorf("create namespace merchant: %w", err)
	}
	stream, err := idm.ImportPairs(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Header{Header: &idmapv1.ImportHeader{
		Namespace: "merchant", FromFormat: "ref", ToFormat: "id"}}}); err != nil {
		return err
	}
	chunk := &idmapv1.PairChunk{}
	for m := 1; m <= merchants; m++ {
		chunk.Pairs = append(chunk.Pairs, &idmapv1.Pair{From: merchantRef(m), To: fmt.Sprint(700000 + m)})
	}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Chunk{Chunk: chunk}}); err != nil {
		return err
	}
	if resp, err := stream.CloseAndRecv(); err != nil || !resp.GetCommitted() {
		return fmt.Errorf("import merchants: %v (committed %v)", err, resp.GetCommitted())
	}
	c, err := contract.Load([]byte(settlementContract), "pay_settlements.yaml")
	if err != nil {
		return err
	}
	if _, err := reg.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: c}); err != nil {
		return fmt.Errorf("register pay.settlements: %w", err)
	}
	return nil
}

func merchantRef(m int) string { return fmt.Sprintf("MER-%06d", m) }

// batch is one batch the suite sends, with the verdicts it must get.
type batch struct {
	id        string
	partition string
	data      []byte
	records   int64
	bad       int64 // records with a currency outside the enum: quarantined
}

// Kinds of batches, each with its own range of settlement ids, so no id is
// sent twice in a partition by different kinds.
var kindBase = map[string]int{"load": 0, "probe": 2_000_000_000, "hang": 3_000_000_000, "corpus": 4_000_000_000}

// makeBatch builds batch number n of a kind, of size records. Every tenth
// record has the currency XXX and must be quarantined.
func makeBatch(kind string, n, size int) batch {
	prefix := kind
	first := kindBase[kind] + n*size
	b := batch{id: fmt.Sprintf("%s-%06d", prefix, n), partition: fmt.Sprintf("2026-03-%02d", 1+n%7), records: int64(size)}
	var buf bytes.Buffer
	day := time.Date(2026, 3, 1+n%7, 9, 0, 0, 0, time.UTC)
	for i := first; i < first+size; i++ {
		currency := "EUR"
		if i%10 == 3 {
			currency, b.bad = "XXX", b.bad+1
		}
		fmt.Fprintf(&buf, `{"settlement_id":"STL-%010d","merchant_ref":"%s","amount":%d.25,"currency":"%s","settled_at":"%s","reference":%d}`+"\n",
			i, merchantRef(1+i%merchants), 10+i%90, currency, day.Add(time.Duration(i%3600)*time.Second).Format(time.RFC3339), i)
	}
	b.data = buf.Bytes()
	return b
}

func (b batch) request() *gatev1.IngestRequest {
	return &gatev1.IngestRequest{Subject: subject, Partition: b.partition, SummaryOnly: true,
		Identity: &gatev1.IngestRequest_BatchId{BatchId: b.id},
		Batch:    &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: b.data}}}}
}
