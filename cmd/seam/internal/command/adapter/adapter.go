// Package adapter holds the adapter's client commands under `seam
// adapter`: preview what a mapping makes of sample records.
package adapter

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// AddCommands adds the client commands to the `seam adapter` group.
func AddCommands(group *cobra.Command, g *client.Globals) {
	group.AddCommand(newPreviewCmd(g))
}

func newPreviewCmd(g *client.Globals) *cobra.Command {
	var subject, file, format string
	var version int32
	return client.ServiceCommand(g, adapterv1.NewAdapterServiceClient, "preview ([SUBJECT] [--version N] | -f CONTRACT) SAMPLES", cobra.RangeArgs(1, 2), client.Help{
		Short: "Show, field by field, what a mapping makes of sample records",
		Long: `Run a registered mapping (--subject, --version) or a proposed contract's
mapping (-f, before registering it) on sample records and show, for each
canonical field, the source value and the canonical value or the error.
What a source team looks at before registering a version. Exits 1 when the
mapping does not compile or a sample record fails.`,
		Example: `  seam adapter preview shop.orders samples.ndjson
  seam adapter preview -f shop_orders_v2.yaml samples.ndjson -o json`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&subject, "subject", "", "subject of a registered mapping (or give it as the first argument)")
			fs.Int32Var(&version, "version", 0, "contract version (default: the active one)")
			fs.StringVarP(&file, "file", "f", "", "a proposed contract (YAML) whose mapping to preview")
			fs.StringVar(&format, "format", "", "ndjson, csv or json (default: from the samples' extension)")
		},
	}, func(cmd *cobra.Command, args []string, ac adapterv1.AdapterServiceClient) error {
		subject, err := client.Subject(args[:len(args)-1], subject)
		if err != nil {
			return err
		}
		samples := args[len(args)-1]
		req := &adapterv1.PreviewRequest{Subject: subject, Version: version}
		if file != "" {
			c, err := client.ReadContract(cmd, file)
			if err != nil {
				return err
			}
			req.Proposed = c
		} else if subject == "" {
			return exit.Usagef("give the subject (a registered mapping) or -f CONTRACT (a proposed one)")
		}
		f, err := client.FileFormat(samples, format)
		if err != nil {
			return err
		}
		data, err := client.ReadInput(cmd, samples)
		if err != nil {
			return err
		}
		req.Batch = &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: f, Data: data}}}
		ctx, cancel := g.CallCtx(cmd.Context())
		defer cancel()
		resp, err := ac.Preview(ctx, req)
		if err != nil {
			return g.RPCError("preview", err)
		}
		if g.JSON() {
			if err := output.Proto(cmd.OutOrStdout(), resp); err != nil {
				return err
			}
		} else if err := printPreview(cmd.OutOrStdout(), resp); err != nil {
			return err
		}
		failed := 0
		for _, r := range resp.GetRecords() {
			if recordFailed(r) {
				failed++
			}
		}
		if len(resp.GetProblems()) > 0 || failed > 0 {
			return exit.Failf("%d mapping problems, %d of %d sample records fail", len(resp.GetProblems()), failed, len(resp.GetRecords()))
		}
		return nil
	})
}

// recordFailed reports whether a previewed record, or any of its fields,
// failed.
func recordFailed(r *adapterv1.PreviewRecord) bool {
	if len(r.GetErrors()) > 0 {
		return true
	}
	for _, f := range r.GetFields() {
		if f.GetError() != nil {
			return true
		}
	}
	return false
}

var compactJSON = protojson.MarshalOptions{}

// showValue renders a JSON value compactly, "-" when absent.
func showValue(v *structpb.Value) string {
	if v == nil {
		return "-"
	}
	b, err := compactJSON.Marshal(v)
	if err != nil {
		return "?"
	}
	s := string(b)
	if len(s) > 48 {
		s = s[:45] + "…"
	}
	return s
}

func printPreview(w io.Writer, r *adapterv1.PreviewResponse) error {
	if len(r.GetProblems()) > 0 {
		fmt.Fprintln(w, "mapping problems:")
		for _, p := range r.GetProblems() {
			fmt.Fprintf(w, "  %s\n", p)
		}
		fmt.Fprintln(w)
	}
	for _, rec := range r.GetRecords() {
		fmt.Fprintf(w, "record %d (position %d)\n", rec.GetIndex(), rec.GetPosition())
		for _, e := range rec.GetErrors() {
			if e.GetField() == "" {
				fmt.Fprintf(w, "  %s: %s\n", strings.TrimPrefix(e.GetCode().String(), "ERROR_CODE_"), e.GetMessage())
			}
		}
		t := output.NewTable(w, "  FIELD", "SOURCE", "SOURCE VALUE", "CANONICAL VALUE")
		for _, f := range rec.GetFields() {
			canonical := showValue(f.GetCanonicalValue())
			if e := f.GetError(); e != nil {
				canonical = strings.TrimPrefix(e.GetCode().String(), "ERROR_CODE_") + ": " + e.GetMessage()
			}
			t.Row("  "+f.GetField(), output.OrDash(f.GetSource()), showValue(f.GetSourceValue()), canonical)
		}
		if err := t.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}
