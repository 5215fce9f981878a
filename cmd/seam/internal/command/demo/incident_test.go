package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/command/incident"
	"github.com/seamdata/seam/core/examples"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// The drill's day 8 fixed by `seam incident --apply` instead of the
// operator's manual steps reaches the same end state: the same version
// active (the inferred v2 is the hand-written one), the same records
// released and held, the same match rates and consumers to rerun, and the
// reconciliation adds up.
func TestDemoIncidentApply(t *testing.T) {
	t.Parallel()
	cfg := demoConfig{days: 10, perDay: testPerDay, batch: 500, breakDay: 8, seed: 11, customers: 1000, knownShare: 0.98}
	play := func(fix func(addr, admin string) func(*drill, context.Context, int) error) (*demoOutcome, string, *registryv1.ContractVersion) {
		ctx := context.Background()
		conn, addr, admin, stop, err := demoConnection(ctx, &client.Globals{}, false)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		c := cfg
		if fix != nil {
			c.fix = fix(addr, admin)
		}
		var out bytes.Buffer
		o, err := runDemo(ctx, conn, admin, c, &out)
		if err != nil {
			t.Fatalf("demo: %v\n%s", err, out.String())
		}
		v, err := registryv1.NewRegistryServiceClient(conn).GetContract(ctx, &registryv1.GetContractRequest{Subject: "shop.orders"})
		if err != nil {
			t.Fatal(err)
		}
		return o, out.String(), v.GetVersion()
	}
	manual, _, manualV := play(nil)

	var report map[string]any
	auto, text, autoV := play(func(addr, admin string) func(*drill, context.Context, int) error {
		return func(d *drill, ctx context.Context, day int) error {
			// The source's one-time sync, as the manual steps import it.
			var pairs strings.Builder
			pairs.WriteString("uuid,legacy_int\n")
			for k := 1; k <= d.data.known; k++ {
				fmt.Fprintf(&pairs, "%s,%d\n", d.data.customerUUID(k), k)
			}
			file := filepath.Join(t.TempDir(), "customers.csv")
			if err := os.WriteFile(file, []byte(pairs.String()), 0o600); err != nil {
				return err
			}
			var out, errOut bytes.Buffer
			cmd := incident.New(&client.Globals{Addr: addr, Token: admin, Output: "json", Timeout: time.Minute})
			cmd.SetArgs([]string{"shop.orders", "--pairs", file, "--apply", "--reason", "INC-8: the source already sends UUIDs"})
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			if err := cmd.ExecuteContext(ctx); err != nil {
				return fmt.Errorf("seam incident --apply: %v\n%s%s", err, out.String(), errOut.String())
			}
			if err := json.Unmarshal(out.Bytes(), &report); err != nil {
				return fmt.Errorf("seam incident -o json: %v\n%s", err, out.String())
			}
			for _, s := range report["steps"].([]any) {
				st := s.(map[string]any)
				what, _ := st["result"].(string)
				if st["done"] == true {
					what, _ = st["why"].(string)
				}
				d.note("seam incident --apply: %s: %s", st["name"], what)
			}
			// Read back what the incident's replay released, as the manual
			// steps receive it, to count each order once.
			w := report["window"].([]any)
			_, err := d.receive(ctx, &gatev1.ReplayRequest{ReplayId: report["replay_id"].(string), Window: &gatev1.ReplayWindow{
				Subject: "shop.orders", PartitionFrom: w[0].(string), PartitionTo: w[len(w)-1].(string), ContractVersion: 2}})
			return err
		}
	})

	if !reflect.DeepEqual(auto, manual) {
		t.Errorf("--apply ends at\n%+v\nthe manual steps at\n%+v\n%s", auto, manual, text)
	}
	if auto.Sent != auto.Accepted+auto.Released+auto.Held || auto.Duplicates != 0 || auto.Released == 0 {
		t.Errorf("does not reconcile: %+v", auto)
	}
	if !proto.Equal(autoV.GetContract(), examples.ShopOrdersV2()) || !proto.Equal(autoV.GetContract(), manualV.GetContract()) || autoV.GetVersion() != 2 {
		t.Errorf("active after --apply: v%d %v; want v2, the hand-written v2", autoV.GetVersion(), autoV.GetContract())
	}
	rec := report["reconciliation"].(map[string]any)
	if rec["adds_up"] != true {
		t.Errorf("the incident's reconciliation does not add up: %v", rec)
	}
	var names []string
	for _, s := range report["steps"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	if want := "contain the source|import the uuid→legacy-int table (980 pairs)|register shop.orders v2|release the source|replay 2026-03-08..2026-03-08 through v2"; strings.Join(names, "|") != want {
		t.Errorf("steps = %q, want %q", names, want)
	}
}
