package idmap

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/cmd/seam/internal/proposal"
	"github.com/seamdata/seam/core/infer"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// maxInferPairs bounds the pairs a rule is inferred from.
const maxInferPairs = 2_000_000

func newNamespaceAddFormatCmd(g *client.Globals) *cobra.Command {
	var format string
	return client.ServiceCommand(g, idmapv1.NewIdMapServiceClient, "add-format NAMESPACE --format NAME:KIND[:PATTERN]", cobra.ExactArgs(1), client.Help{
		Short: "Add a format to a namespace (formats are never changed or removed)",
		Long: `Add one format to an existing namespace: the shape a source switched its
identifiers to, so a contract version can declare it and a rule or table
can translate it. A format, once added, is never changed or removed:
contracts, rules and tables name it.`,
		Example: `  seam idmap namespace add-format merchant --format 'mer-code:string:^MER-[0-9]{8}$'
  seam idmap namespace add-format customer --format uuid:uuid`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&format, "format", "", "the format as NAME:KIND[:PATTERN], KIND one of int, uuid, string")
		},
	}, func(cmd *cobra.Command, args []string, ic idmapv1.IdMapServiceClient) error {
		if format == "" {
			return exit.Usagef("give --format NAME:KIND[:PATTERN]")
		}
		f, err := parseFormatFlag(format)
		if err != nil {
			return err
		}
		return client.Show(cmd, g, "add format "+f.GetName()+" to "+args[0], ic.AddFormat, &idmapv1.AddFormatRequest{Namespace: args[0], Format: f},
			func(w io.Writer, resp *idmapv1.AddFormatResponse) error {
				return printNamespace(w, resp.GetNamespace())
			})
	})
}

func newExportCmd(g *client.Globals) *cobra.Command {
	var from, to, members string
	var limit int64
	return client.ServiceCommand(g, idmapv1.NewIdMapServiceClient, "export NAMESPACE (--from FORMAT --to FORMAT | --members FORMAT)", cobra.ExactArgs(1), client.Help{
		Short: "Write a lookup table (or member list) as CSV",
		Long: `Write the pairs of one lookup table as a CSV of from-id,to-id with a
header row — the form ` + "`seam idmap import`" + ` reads — oriented as --from and
--to say. With --members, write the known ids of one format.`,
		Example: `  seam idmap export customer --from uuid --to legacy-int > customer_ids.csv
  seam idmap export account --members acc-ref --limit 100`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&from, "from", "", "format of the first column")
			fs.StringVar(&to, "to", "", "format of the second column")
			fs.StringVar(&members, "members", "", "export the member list of this format")
			fs.Int64Var(&limit, "limit", 0, "stop after this many pairs (0: all)")
		},
	}, func(cmd *cobra.Command, args []string, ic idmapv1.IdMapServiceClient) error {
		switch {
		case members != "" && (from != "" || to != ""):
			return exit.Usagef("--members exports one format's ids; leave out --from and --to")
		case members != "":
			from, to = members, ""
		case from == "" || to == "":
			return exit.Usagef("give --from and --to (or --members FORMAT)")
		}
		stream, err := ic.ExportPairs(cmd.Context(), &idmapv1.ExportPairsRequest{Namespace: args[0], FromFormat: from, ToFormat: to, Limit: limit})
		if err != nil {
			return g.RPCError("export "+args[0], err)
		}
		w := csv.NewWriter(cmd.OutOrStdout())
		if members != "" {
			err = w.Write([]string{from})
		} else {
			err = w.Write([]string{from, to})
		}
		if err != nil {
			return err
		}
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return g.RPCError("export "+args[0], err)
			}
			for _, p := range msg.GetPairs() {
				row := []string{p.GetFrom(), p.GetTo()}
				if members != "" {
					row = row[:1]
				}
				if err := w.Write(row); err != nil {
					return err
				}
			}
		}
		w.Flush()
		return w.Error()
	})
}

func newRuleInferCmd(g *client.Globals) *cobra.Command {
	var from, to string
	var noHeader bool
	var nsUUIDs []string
	return client.ServiceCommand(g, idmapv1.NewIdMapServiceClient, "infer NAMESPACE --from FORMAT --to FORMAT [PAIRS.csv]", cobra.RangeArgs(1, 2), client.Help{
		Short: "Find the deterministic rule that maps sample pairs, or say only a table will do",
		Long: `Find a rule idmap can run that maps every from-id of the pairs to its
to-id: a template with an integer or UUID placeholder (zero padding,
prefixes and suffixes, such as ACC-{int:08}), an integer embedded in a
UUID, a UUIDv5 derivation, a change of case or trimmed spaces. The pairs
come from PAIRS.csv (from-id,to-id with a header row unless --no-header)
or, without it, from the lookup table of the two formats already loaded.
Each candidate is compiled as idmap compiles it and verified on every
pair; the pairs it gets wrong are listed. Exits 0 with the rule and the
command that sets it, or 1 saying plainly that only a lookup table will
do (random UUIDs, say).

UUIDv5 namespaces cannot be recovered from the UUIDs (SHA-1 cannot be
inverted), so a list of candidates is tried: the RFC 9562 namespaces
(DNS, URL, OID, X.500), the nil and max UUIDs, the UUIDv5 of the idmap
namespace's name and of each format's name (and "namespace/format")
under the DNS and URL namespaces, and any given with --namespace-uuid.`,
		Example: `  seam idmap rule infer merchant --from legacy-int --to mer-code sample.csv
  seam idmap rule infer customer --from uuid --to legacy-int
  seam idmap rule infer account --from number --to uuid pairs.csv --namespace-uuid 1b671a64-40d5-491e-99b0-da01ff1f3341`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&from, "from", "", "format of the pairs' first id")
			fs.StringVar(&to, "to", "", "format of the pairs' second id")
			fs.BoolVar(&noHeader, "no-header", false, "the first row of PAIRS.csv is data, not a header")
			fs.StringArrayVar(&nsUUIDs, "namespace-uuid", nil, "a UUIDv5 namespace UUID to try beside the usual ones (repeatable)")
		},
	}, func(cmd *cobra.Command, args []string, c idmapv1.IdMapServiceClient) error {
		if from == "" || to == "" {
			return exit.Usagef("give --from and --to: the formats of the pairs' first and second id")
		}
		ctx, cancel := g.CallCtx(cmd.Context())
		defer cancel()
		nsResp, err := c.GetNamespace(ctx, &idmapv1.GetNamespaceRequest{Name: args[0]})
		if err != nil {
			return g.RPCError("get namespace "+args[0], err)
		}
		ns := nsResp.GetNamespace()
		ff, tf := formatNamed(ns, from), formatNamed(ns, to)
		if ff == nil || tf == nil {
			missing := from
			if ff != nil {
				missing = to
			}
			return exit.Usagef("namespace %s has no format %q (formats: %s); add it with `seam idmap namespace add-format`", args[0], missing, formatList(ns))
		}
		var pairs []infer.Pair
		source := ""
		if len(args) == 2 {
			f, err := os.Open(args[1])
			if err != nil {
				return exit.Usagef("%w", err)
			}
			defer f.Close()
			if pairs, err = ReadPairsCSV(f, !noHeader, args[1]); err != nil {
				return err
			}
			source = args[1]
		} else {
			if pairs, err = proposal.ExportPairs(ctx, c, &idmapv1.ExportPairsRequest{Namespace: args[0], FromFormat: from, ToFormat: to, Limit: maxInferPairs}); err != nil {
				return g.RPCError("read the "+from+"↔"+to+" table of "+args[0], err)
			}
			source = fmt.Sprintf("the %s↔%s table", from, to)
		}
		finding, err := infer.InferRule(infer.RuleQuery{Namespace: args[0], From: ff, To: tf, Pairs: pairs, NamespaceUUIDs: nsUUIDs})
		if err != nil {
			return exit.Usagef("%w", err)
		}
		if g.JSON() {
			j := map[string]any{"namespace": args[0], "from": from, "to": to, "source": source, "pairs": len(pairs), "finding": finding,
				"table_only": finding.TableOnly()}
			if finding.Rule != nil {
				j["rule"] = infer.DescribeRule(finding.Rule)
				j["set"] = "seam idmap rule set " + args[0] + " " + infer.RuleFlags(finding.Rule) + samples(finding.Samples)
			}
			if err := output.Value(cmd.OutOrStdout(), j); err != nil {
				return err
			}
		} else {
			printFinding(cmd.OutOrStdout(), args[0], source, len(pairs), finding)
		}
		if finding.TableOnly() {
			return exit.Failf("no rule maps %s to %s: only a lookup table will do", from, to)
		}
		return nil
	})
}

func formatNamed(ns *idmapv1.Namespace, name string) *idmapv1.Format {
	for _, f := range ns.GetFormats() {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

func formatList(ns *idmapv1.Namespace) string {
	var names []string
	for _, f := range ns.GetFormats() {
		names = append(names, f.GetName())
	}
	return strings.Join(names, ", ")
}

func samples(s []string) string {
	var b strings.Builder
	for _, x := range s {
		fmt.Fprintf(&b, " --sample %s", x)
	}
	return b.String()
}

func printFinding(w io.Writer, namespace, source string, n int, f *infer.RuleFinding) {
	fmt.Fprintf(w, "%d pairs from %s\n", n, source)
	if f.Rule != nil {
		fmt.Fprintf(w, "rule: %s\n%s\nverified on every pair: %d right, %d wrong\n", infer.DescribeRule(f.Rule), f.Why, f.Matched, f.Wrong)
		for _, a := range f.Alternatives {
			fmt.Fprintf(w, "fits the pairs as well: %s (they cannot tell the two apart)\n", a)
		}
	} else {
		fmt.Fprintln(w, f.Why)
	}
	if len(f.Exceptions) > 0 {
		fmt.Fprintln(w, "\npairs it gets wrong:")
		t := output.NewTable(w, "FROM", "TO", "RULE GIVES", "WHY")
		for _, e := range f.Exceptions {
			t.Row(e.Pair.From, e.Pair.To, output.OrDash(e.Got), e.Why)
		}
		if f.Wrong > len(f.Exceptions) {
			t.Row("…", strconv.Itoa(f.Wrong-len(f.Exceptions))+" more", "", "")
		}
		t.Flush()
	}
	if len(f.Tried) > 0 && f.Rule == nil {
		fmt.Fprintln(w, "\ntried:")
		for _, t := range f.Tried {
			fmt.Fprintf(w, "  %s\n", t)
		}
	}
	if f.Rule != nil {
		fmt.Fprintf(w, "\nset it: seam idmap rule set %s %s%s\n", namespace, infer.RuleFlags(f.Rule), samples(f.Samples))
	}
}

// ReadPairsCSV reads from-id,to-id pairs, skipping a header row when
// header is set; name is for messages.
func ReadPairsCSV(r io.Reader, header bool, name string) ([]infer.Pair, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.FieldsPerRecord = 2
	cr.ReuseRecord = true
	var out []infer.Pair
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, exit.Failf("%s: %w (want two columns: from-id,to-id)", name, err)
		}
		if line == 1 && header {
			continue
		}
		if len(out) == maxInferPairs {
			return nil, exit.Failf("%s: more than %d pairs; a sample will do", name, maxInferPairs)
		}
		out = append(out, infer.Pair{From: strings.TrimSpace(rec[0]), To: strings.TrimSpace(rec[1])})
	}
}

// ImportPairs streams pairs into a lookup table of namespace from→to, as
// `seam idmap import` does, and fails unless the import committed whole.
func ImportPairs(ctx context.Context, c idmapv1.IdMapServiceClient, namespace, from, to string, pairs []infer.Pair) (*idmapv1.ImportPairsResponse, error) {
	stream, err := c.ImportPairs(ctx)
	if err != nil {
		return nil, err
	}
	h := &idmapv1.ImportHeader{Namespace: namespace, FromFormat: from, ToFormat: to}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Header{Header: h}}); err != nil {
		return nil, streamErr(stream, err)
	}
	for i := 0; i < len(pairs); i += PairsPerMessage {
		chunk := &idmapv1.PairChunk{}
		for _, p := range pairs[i:min(i+PairsPerMessage, len(pairs))] {
			chunk.Pairs = append(chunk.Pairs, &idmapv1.Pair{From: p.From, To: p.To})
		}
		if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Chunk{Chunk: chunk}}); err != nil {
			return nil, streamErr(stream, err)
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return nil, err
	}
	if !resp.GetCommitted() {
		why := "the import was not committed"
		if cs := resp.GetConflicts(); len(cs) > 0 {
			why = fmt.Sprintf("%d pairs conflict with the table (first, line %d: %s)", len(cs), cs[0].GetLine(), cs[0].GetMessage())
		}
		return resp, fmt.Errorf("import %s→%s into %s: %s", from, to, namespace, why)
	}
	return resp, nil
}
