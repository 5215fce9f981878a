package gate

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/platform/server"
	"github.com/seamdata/seam/platform/telemetry"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// startREST serves the gate of e behind the runtime's REST gateway
// (platform/server, the same marshaler `seam up` uses) and returns its
// base URL.
func startREST(t testing.TB, e *gateEnv) string {
	t.Helper()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "gate-test", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("telemetry: %v", err)
	}
	srv, err := server.New(server.Config{Tokens: e.tokenSet, Logger: slog.New(slog.DiscardHandler), Telemetry: tel},
		server.Service{Name: "seam.gate.v1.GateService", Register: e.srv.Register, Gateway: gatev1.RegisterGateServiceHandler, Access: Access})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	glis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	hlis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, server.Listeners{GRPC: glis, HTTP: hlis}) }()
	t.Cleanup(func() { cancel(); <-done; _ = tel.Shutdown(context.Background()) })
	return "http://" + hlis.Addr().String()
}

// postJSON posts body with the token of principal and decodes the answer.
func postJSON(t testing.TB, e *gateEnv, url, principal string, body any, out any) int {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("encode request: %v", err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+e.tokens[principal])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("decode answer %s: %v", raw, err)
		}
	}
	return resp.StatusCode
}

// bankTransfers is a source of our own: transfers with a 64-bit account
// reference, mapped into the bank.transfer canonical model.
//
//go:embed testdata/bank_transfers.yaml
var bankTransfersYAML string

//go:embed testdata/bank_transfer_model.yaml
var bankTransferModelYAML string

func registerBankTransfers(t testing.TB, p *peers) {
	t.Helper()
	m, err := contract.LoadCanonicalModel([]byte(bankTransferModelYAML), "bank_transfer.yaml")
	if err != nil {
		t.Fatalf("load model: %v", err)
	}
	c, err := contract.Load([]byte(bankTransfersYAML), "bank_transfers.yaml")
	if err != nil {
		t.Fatalf("load contract: %v", err)
	}
	ctx := context.Background()
	if _, err := p.registry.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: m}); err != nil {
		t.Fatalf("register bank.transfer: %v", err)
	}
	if _, err := p.registry.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: c}); err != nil {
		t.Fatalf("register bank.transfers: %v", err)
	}
}

// transfers are the records every path sends, as JSON text: account ids
// beyond 2^53, an integral literal with a fraction, escapes, exponents.
var transfers = []string{
	`{"transfer_id":"T-1","account_id":9007199254740993,"amount":12.50,"memo":"rent \"May\", flat 3","booked_at":"2026-10-01T10:00:00Z"}`,
	`{"transfer_id":"T-2","account_id":1234567890123456789,"amount":1e3,"memo":"<b>&amp;</b>","booked_at":"2026-10-01T10:05:00Z"}`,
	`{"transfer_id":"T-3","account_id":1001.0,"amount":5,"booked_at":"2026-10-01T10:10:00Z"}`,
	`{"transfer_id":"T-4","account_id":42,"amount":-0.25,"memo":"ünïcödé","booked_at":"2026-10-01T10:15:00Z"}`,
	`{"transfer_id":"T-5","account_id":-9223372036854775808,"amount":0.1,"booked_at":"2026-10-01T10:20:00Z"}`,
}

// csvOf renders the transfers as CSV with a header.
func csvOf(t *testing.T, records []string) []byte {
	t.Helper()
	cols := []string{"transfer_id", "account_id", "amount", "memo", "booked_at"}
	var b strings.Builder
	b.WriteString(strings.Join(cols, ",") + "\n")
	for _, r := range records {
		dec := json.NewDecoder(strings.NewReader(r))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("decode %s: %v", r, err)
		}
		cells := make([]string, len(cols))
		for i, c := range cols {
			switch v := m[c].(type) {
			case nil:
			case json.Number:
				cells[i] = v.String()
			case string:
				cells[i] = `"` + strings.ReplaceAll(v, `"`, `""`) + `"`
			}
		}
		b.WriteString(strings.Join(cells, ",") + "\n")
	}
	return []byte(b.String())
}

// verdictOf is what a path decided about one record: its status and
// reason codes, and for an accepted record its id and canonical JSON.
type verdictOf struct {
	status    string
	reasons   string
	recordID  string
	canonical string
}

func (v verdictOf) String() string {
	return fmt.Sprintf("%s %s %s %s", v.status, v.reasons, v.recordID, v.canonical)
}

func grpcVerdicts(resp *gatev1.IngestResponse) []verdictOf {
	out := make([]verdictOf, len(resp.GetRecords()))
	for i, r := range resp.GetRecords() {
		v := verdictOf{status: r.GetStatus().String(), recordID: r.GetRecord().GetRecordId(), canonical: string(r.GetRecord().GetJson())}
		for _, e := range r.GetReasons() {
			v.reasons += e.GetCode().String() + "@" + e.GetField() + " "
		}
		out[i] = v
	}
	return out
}
