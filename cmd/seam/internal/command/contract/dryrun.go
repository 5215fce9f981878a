package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/dryrun"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// checkDryRun is the dry run `seam contract check` adds to the registry's
// verdict: the proposed version run on the subject's quarantined records.
type checkDryRun struct {
	result *dryrun.Result
	// err says why the dry run could not run; it does not change the
	// check's verdict or exit code.
	err error
}

// runCheckDryRun runs the dry run when the subject exists and the contract
// is valid, through the gate and the adapter on conn.
func runCheckDryRun(ctx context.Context, conn grpc.ClientConnInterface, c *contractv1.Contract, r *registryv1.CheckContractResponse, sample int) *checkDryRun {
	if sample <= 0 || r.GetLatestVersion() == 0 || r.GetVerdict() == registryv1.Verdict_VERDICT_INVALID {
		return nil
	}
	res, err := dryrun.Run(ctx, gatev1.NewGateServiceClient(conn), adapterv1.NewAdapterServiceClient(conn), c, dryrun.Options{Sample: sample})
	return &checkDryRun{result: res, err: err}
}

func printDryRun(w io.Writer, d *checkDryRun) {
	if d == nil {
		return
	}
	if d.err != nil {
		fmt.Fprintf(w, "\ndry run on quarantined records skipped: %v\n", d.err)
		return
	}
	r := d.result
	if r.Held == 0 {
		fmt.Fprintf(w, "\ndry run: nothing of %s is quarantined\n", r.Subject)
		return
	}
	window := r.PartitionFrom
	if r.PartitionTo != "" && r.PartitionTo != r.PartitionFrom {
		window += ".." + r.PartitionTo
	}
	fmt.Fprintf(w, "\ndry run on quarantined records (%d of %d held, partitions %s):\n", r.Sampled, r.Held, window)
	fmt.Fprintf(w, "  %d of %d would pass (%.1f%%)", r.Passed, r.Sampled, 100*r.PassRate())
	if stay := r.Sampled - r.Passed; stay > 0 {
		codes := make([]string, 0, len(r.Remain))
		for c := range r.Remain {
			codes = append(codes, c)
		}
		sort.Strings(codes)
		parts := make([]string, len(codes))
		for i, c := range codes {
			parts[i] = fmt.Sprintf("%d %s", r.Remain[c], c)
		}
		fmt.Fprintf(w, "; %d would stay (%s)", stay, strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  mapping problem: %s\n", p)
	}
	for _, e := range r.Examples {
		fmt.Fprintf(w, "  stays: %s position %d: %s %s\n", e.Partition, e.Position, e.Code, e.Message)
	}
}

// printCheckJSON prints the registry's answer with the dry run beside it
// as "dry_run" (or "dry_run_error").
func printCheckJSON(w io.Writer, r *registryv1.CheckContractResponse, d *checkDryRun) error {
	if d == nil {
		return output.Proto(w, r)
	}
	b, err := output.MarshalProto(output.Line, r)
	if err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	if d.err != nil {
		out["dry_run_error"] = d.err.Error()
	} else {
		out["dry_run"] = d.result
	}
	return output.Value(w, out)
}
