// Package idmap holds idmap's client commands under `seam idmap`:
// namespaces, rules, lookup-table imports, translation and statistics.
package idmap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/idrule"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// AddCommands adds the client commands to the `seam idmap` group.
func AddCommands(group *cobra.Command, g *client.Globals) {
	ns := &cobra.Command{Use: "namespace", Short: "Create and read identifier namespaces"}
	ns.AddCommand(newNamespaceCreateCmd(g), newNamespaceGetCmd(g), newNamespaceListCmd(g), newNamespaceAddFormatCmd(g))
	rule := &cobra.Command{Use: "rule", Short: "Set and infer translation rules between formats"}
	rule.AddCommand(newRuleSetCmd(g), newRuleInferCmd(g))
	group.AddCommand(ns, rule, newImportCmd(g), newExportCmd(g), newTranslateCmd(g), newIdmapStatsCmd(g))
}

func newNamespaceCreateCmd(g *client.Globals) *cobra.Command {
	var file, description string
	var formats []string
	return client.ServiceCommand(g, idmapv1.NewIdMapServiceClient, "create NAME --format NAME:KIND[:PATTERN]... | -f FILE", cobra.MaximumNArgs(1), client.Help{
		Short: "Create a namespace with its formats",
		Example: `  seam idmap namespace create customer --format legacy-int:int --format uuid:uuid
  seam idmap namespace create customer --format crm-code:string:'^CRM-[0-9]{8}$'
  seam idmap namespace create -f customer.yaml`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&file, "file", "f", "", "namespace YAML (- for standard input)")
			fs.StringVar(&description, "description", "", "what the namespace identifies")
			fs.StringArrayVar(&formats, "format", nil, "a format as NAME:KIND[:PATTERN], KIND one of int, uuid, string (repeatable)")
		},
	}, func(cmd *cobra.Command, args []string, ic idmapv1.IdMapServiceClient) error {
		n := &idmapv1.Namespace{}
		if file != "" {
			data, err := client.ReadInput(cmd, file)
			if err != nil {
				return err
			}
			if err := contract.Decode(data, file, n); err != nil {
				return exit.Failf("%w", err)
			}
		}
		if len(args) == 1 {
			n.Name = args[0]
		}
		if description != "" {
			n.Description = description
		}
		for _, f := range formats {
			pf, err := parseFormatFlag(f)
			if err != nil {
				return err
			}
			n.Formats = append(n.Formats, pf)
		}
		if n.GetName() == "" {
			return exit.Usagef("name the namespace: seam idmap namespace create NAME --format …")
		}
		return client.Show(cmd, g, "create namespace "+n.GetName(), ic.CreateNamespace, &idmapv1.CreateNamespaceRequest{Namespace: n},
			func(w io.Writer, resp *idmapv1.CreateNamespaceResponse) error {
				return printNamespace(w, resp.GetNamespace())
			})
	})
}

func parseFormatFlag(s string) (*idmapv1.Format, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) < 2 {
		return nil, exit.Usagef("--format %q: want NAME:KIND[:PATTERN], for example legacy-int:int", s)
	}
	kind, ok := idmapv1.FormatKind_value["FORMAT_KIND_"+strings.ToUpper(parts[1])]
	if !ok || kind == 0 {
		return nil, exit.Usagef("--format %q: kind %q is not one of int, uuid, string", s, parts[1])
	}
	f := &idmapv1.Format{Name: parts[0], Kind: idmapv1.FormatKind(kind)}
	if len(parts) == 3 {
		f.Pattern = parts[2]
	}
	return f, nil
}

func printNamespace(w io.Writer, n *idmapv1.Namespace) error {
	fmt.Fprintf(w, "namespace %s", n.GetName())
	if n.GetDescription() != "" {
		fmt.Fprintf(w, ": %s", n.GetDescription())
	}
	fmt.Fprintln(w)
	t := output.NewTable(w, "FORMAT", "KIND", "PATTERN")
	for _, f := range n.GetFormats() {
		t.Row(f.GetName(), strings.ToLower(output.Enum(f.GetKind(), "FORMAT_KIND_")), output.OrDash(f.GetPattern()))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if len(n.GetRules()) > 0 {
		fmt.Fprintln(w)
		t = output.NewTable(w, "FROM", "TO", "STRATEGY", "REVERSIBLE")
		for _, r := range n.GetRules() {
			t.Row(r.GetFromFormat(), r.GetToFormat(), describeRule(r), output.YesNo(r.GetReversible()))
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if len(n.GetTables()) > 0 {
		fmt.Fprintln(w)
		t = output.NewTable(w, "TABLE", "PAIRS", "GENERATION", "UPDATED")
		for _, tb := range n.GetTables() {
			name := tb.GetFromFormat() + " ↔ " + tb.GetToFormat()
			if tb.GetMembers() {
				name = tb.GetFromFormat() + " members"
			}
			t.Row(name, strconv.FormatInt(tb.GetPairs(), 10), strconv.FormatInt(tb.GetGeneration(), 10), output.Time(tb.GetUpdateTime()))
		}
		return t.Flush()
	}
	return nil
}

func describeRule(r *idmapv1.Rule) string {
	switch s := r.GetStrategy().(type) {
	case *idmapv1.Rule_Template:
		return "template " + s.Template.GetTemplate()
	case *idmapv1.Rule_UuidEmbed:
		return "uuid-embed prefix " + s.UuidEmbed.GetPrefix()
	case *idmapv1.Rule_UuidV5:
		return "uuid-v5 namespace " + s.UuidV5.GetNamespaceUuid()
	case *idmapv1.Rule_Normalize:
		return fmt.Sprintf("normalize case=%s trim=%v", output.OrDash(s.Normalize.GetCase()), s.Normalize.GetTrimSpace())
	case *idmapv1.Rule_Lookup:
		return "lookup table"
	}
	return "-"
}

func newNamespaceGetCmd(g *client.Globals) *cobra.Command {
	return client.ServiceCommand(g, idmapv1.NewIdMapServiceClient, "get NAME", cobra.ExactArgs(1), client.Help{
		Short:   "Show a namespace with its formats, rules and tables",
		Example: "  seam idmap namespace get customer",
	}, func(cmd *cobra.Command, args []string, ic idmapv1.IdMapServiceClient) error {
		return client.Show(cmd, g, "get namespace "+args[0], ic.GetNamespace, &idmapv1.GetNamespaceRequest{Name: args[0]},
			func(w io.Writer, resp *idmapv1.GetNamespaceResponse) error {
				return printNamespace(w, resp.GetNamespace())
			})
	})
}

func newNamespaceListCmd(g *client.Globals) *cobra.Command {
	return client.ServiceCommand(g, idmapv1.NewIdMapServiceClient, "list", cobra.NoArgs, client.Help{
		Short:   "List namespaces",
		Example: "  seam idmap namespace list -o json",
	}, func(cmd *cobra.Command, _ []string, ic idmapv1.IdMapServiceClient) error {
		return client.Show(cmd, g, "list namespaces", ic.ListNamespaces, &idmapv1.ListNamespacesRequest{},
			func(w io.Writer, resp *idmapv1.ListNamespacesResponse) error {
				t := output.NewTable(w, "NAMESPACE", "FORMATS", "RULES", "TABLES")
				for _, n := range resp.GetNamespaces() {
					var fs []string
					for _, f := range n.GetFormats() {
						fs = append(fs, f.GetName())
					}
					t.Row(n.GetName(), strings.Join(fs, ","), strconv.Itoa(len(n.GetRules())), strconv.Itoa(len(n.GetTables())))
				}
				return t.Flush()
			})
	})
}

func newRuleSetCmd(g *client.Globals) *cobra.Command {
	var from, to, template, embed, v5, normalize string
	var lookup, reversible bool
	var samples []string
	return client.ServiceCommand(g, idmapv1.NewIdMapServiceClient, "set NAMESPACE --from FORMAT --to FORMAT (--template T | --uuid-embed PREFIX | --uuid-v5 UUID | --normalize MODE | --lookup) [--reversible]", cobra.ExactArgs(1), client.Help{
		Short: "Set how one format translates into another, validated on samples",
		Example: `  seam idmap rule set customer --from legacy-int --to crm-code --template 'CRM-{int:08}' --reversible --sample 42 --sample 1234567
  seam idmap rule set customer --from legacy-int --to uuid --uuid-embed 00000000deadbeef --sample 7
  seam idmap rule set customer --from uuid --to legacy-int --lookup`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&from, "from", "", "source format")
			fs.StringVar(&to, "to", "", "target format")
			fs.StringVar(&template, "template", "", "template with typed placeholder, e.g. CUST-{int:08}")
			fs.StringVar(&embed, "uuid-embed", "", "UUID prefix (16 hex digits) whose low 64 bits hold the integer")
			fs.StringVar(&v5, "uuid-v5", "", "namespace UUID for UUIDv5 derivation (forward only)")
			fs.StringVar(&normalize, "normalize", "", "lower|upper[,trim]")
			fs.BoolVar(&lookup, "lookup", false, "translate through the lookup table")
			fs.StringArrayVar(&samples, "sample", nil, "a source id the rule is validated on (repeatable)")
			fs.BoolVar(&reversible, "reversible", false, "the rule also translates --to ids back to --from ids (templates, uuid-embed, a change of case); checked on the samples")
		},
	}, func(cmd *cobra.Command, args []string, ic idmapv1.IdMapServiceClient) error {
		r := &idmapv1.Rule{FromFormat: from, ToFormat: to, Reversible: reversible}
		n := 0
		if template != "" {
			r.Strategy, n = &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: template}}, n+1
		}
		if embed != "" {
			r.Strategy, n = &idmapv1.Rule_UuidEmbed{UuidEmbed: &idmapv1.UuidEmbedRule{Prefix: embed}}, n+1
		}
		if v5 != "" {
			r.Strategy, n = &idmapv1.Rule_UuidV5{UuidV5: &idmapv1.UuidV5Rule{NamespaceUuid: v5}}, n+1
		}
		if normalize != "" {
			nr := &idmapv1.NormalizeRule{}
			for _, m := range strings.Split(normalize, ",") {
				switch strings.TrimSpace(m) {
				case "lower", "upper":
					nr.Case = strings.TrimSpace(m)
				case "trim":
					nr.TrimSpace = true
				default:
					return exit.Usagef("--normalize %q: use lower, upper and/or trim, comma separated", normalize)
				}
			}
			r.Strategy, n = &idmapv1.Rule_Normalize{Normalize: nr}, n+1
		}
		if lookup {
			r.Strategy, n = &idmapv1.Rule_Lookup{Lookup: &idmapv1.LookupRule{}}, n+1
		}
		if n != 1 || from == "" || to == "" {
			return exit.Usagef("give --from, --to and exactly one of --template, --uuid-embed, --uuid-v5, --normalize, --lookup")
		}
		return client.Show(cmd, g, "set rule "+from+" → "+to, ic.SetRule, &idmapv1.SetRuleRequest{Namespace: args[0], Rule: r, Samples: samples},
			func(w io.Writer, resp *idmapv1.SetRuleResponse) error {
				fmt.Fprintf(w, "%s: %s → %s by %s (reversible: %s), checked on %d samples\n",
					args[0], from, to, describeRule(resp.GetRule()), output.YesNo(resp.GetRule().GetReversible()), resp.GetChecked())
				return nil
			})
	})
}

// PairsPerMessage is how many pairs one message of an import stream carries.
const PairsPerMessage = 10000

func newImportCmd(g *client.Globals) *cobra.Command {
	var from, to, onConflict, members string
	var replace, noHeader bool
	return client.ServiceCommand(g, idmapv1.NewIdMapServiceClient, "import NAMESPACE FILE.csv (--from FORMAT --to FORMAT | --members FORMAT)", cobra.ExactArgs(2), client.Help{
		Short: "Bulk-load a lookup table from a two-column CSV, atomically",
		Long: `Stream a CSV of pairs (from-id,to-id) into the namespace's lookup table.
The import is committed atomically: readers see the old table or the new
one. Re-importing the same pairs changes nothing. A pair that would map one
id to two, in either direction, is a conflict: by default the whole import
fails; with --on-conflict skip the clean pairs are committed and every
conflict listed.

The first row is a header, and is checked: a first row that is a valid
pair of ids (and does not name the two formats) is refused, so a file
without a header never loses its first pair. Give --no-header for a file
whose first row is data.

With --members the CSV has one column: the known ids of one format, the
population the match rate measures against. A member list coexists with
deterministic rules, which translate any valid id but cannot say which
ids exist.

Exits 1 when conflicts stopped or trimmed the import, 3 when the file has
the wrong number of columns or its first row is data without --no-header.`,
		Example: `  seam idmap import customer customer_ids.csv --from uuid --to legacy-int
  seam idmap import customer ids.csv --from uuid --to legacy-int --on-conflict skip -o json
  seam idmap import account known_accounts.csv --members acc-ref`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&from, "from", "", "format of the first column")
			fs.StringVar(&to, "to", "", "format of the second column")
			fs.StringVar(&onConflict, "on-conflict", "fail", "fail: abort the whole import on a conflict; skip: import the clean pairs")
			fs.BoolVar(&replace, "replace", false, "make the file the whole table (pairs not in it are removed)")
			fs.BoolVar(&noHeader, "no-header", false, "the file has no header: its first row is a pair to import")
			fs.StringVar(&members, "members", "", "import a one-column list of the known ids of this format (a member list)")
		},
	}, func(cmd *cobra.Command, args []string, ic idmapv1.IdMapServiceClient) error {
		policy := idmapv1.ConflictPolicy_CONFLICT_POLICY_FAIL
		switch onConflict {
		case "fail":
		case "skip":
			policy = idmapv1.ConflictPolicy_CONFLICT_POLICY_SKIP
		default:
			return exit.Usagef("--on-conflict %q: use fail or skip", onConflict)
		}
		switch {
		case members != "" && (from != "" || to != ""):
			return exit.Usagef("--members imports one format's ids; leave out --from and --to")
		case members != "":
			from = members
		case from == "" || to == "":
			return exit.Usagef("give --from and --to: the formats of the CSV's first and second column (or --members FORMAT for a one-column list of known ids)")
		}
		f, info, err := client.OpenFile(args[1])
		if err != nil {
			return err
		}
		defer f.Close()
		formats, err := namespaceFormats(cmd, g, ic, args[0], from, to)
		if err != nil {
			return err
		}
		bar := output.Progress(cmd.ErrOrStderr(), info.Size(), "importing "+args[1])
		sctx, progress, stop := g.Stream(cmd.Context())
		defer stop()
		resp, err := importCSV(sctx, ic, io.TeeReader(f, bar), &idmapv1.ImportHeader{
			Namespace: args[0], FromFormat: from, ToFormat: to, OnConflict: policy, Replace: replace, Members: members != "",
		}, firstRow{formats: formats, noHeader: noHeader}, args[1], progress, func(pairs int) func() {
			// The server checks and indexes every pair before it
			// answers, and sends nothing meanwhile: it is allowed
			// --timeout for each million pairs, not --timeout in all.
			return client.Allow(progress, g.Timeout, g.Timeout*time.Duration(max(1, (pairs+999_999)/1_000_000)))
		})
		err = client.Cause(sctx, err)
		bar.Finish()
		if err != nil {
			return g.RPCError("import "+args[1], err)
		}
		if g.JSON() {
			if err := output.Proto(cmd.OutOrStdout(), resp); err != nil {
				return err
			}
		} else {
			printImport(cmd.OutOrStdout(), resp)
		}
		if len(resp.GetConflicts()) > 0 {
			if resp.GetCommitted() {
				return exit.Failf("%d conflicting pairs were left out", len(resp.GetConflicts()))
			}
			return exit.Failf("%d conflicting pairs: nothing was imported (use --on-conflict skip to import the clean pairs)", len(resp.GetConflicts()))
		}
		return nil
	})
}

// importCSV streams the pairs of r to ImportPairs, calling progress after
// each message sent and await(pairs sent) before waiting for the answer
// (its result once the answer came).
func importCSV(ctx context.Context, c idmapv1.IdMapServiceClient, r io.Reader, h *idmapv1.ImportHeader, first firstRow, name string, progress func(), await func(pairs int) func()) (*idmapv1.ImportPairsResponse, error) {
	stream, err := c.ImportPairs(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Header{Header: h}}); err != nil {
		return nil, streamErr(stream, err)
	}
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.FieldsPerRecord = 2
	columns := "two columns: from-id,to-id"
	if h.GetMembers() {
		cr.FieldsPerRecord, columns = 1, "one column: the id"
	}
	cr.ReuseRecord = true
	chunk := make([]*idmapv1.Pair, 0, PairsPerMessage)
	sent := 0
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		sent += len(chunk)
		err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Chunk{Chunk: &idmapv1.PairChunk{Pairs: chunk}}})
		chunk = make([]*idmapv1.Pair, 0, PairsPerMessage)
		progress()
		return err
	}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			stream.CloseSend()
			return nil, exit.Invalidf("%s: %w (want %s)", name, err, columns)
		}
		if line == 1 {
			skip, err := first.isHeader(rec)
			if err != nil {
				stream.CloseSend()
				return nil, exit.Invalidf("%s: %w", name, err)
			}
			if skip {
				continue
			}
		}
		p := &idmapv1.Pair{From: strings.TrimSpace(rec[0])}
		if !h.GetMembers() {
			p.To = strings.TrimSpace(rec[1])
		}
		chunk = append(chunk, p)
		if len(chunk) == PairsPerMessage {
			if err := flush(); err != nil {
				return nil, streamErr(stream, err)
			}
		}
	}
	if err := flush(); err != nil {
		return nil, streamErr(stream, err)
	}
	defer await(sent)()
	return stream.CloseAndRecv()
}

// namespaceFormats returns the namespace's --from and --to formats, to
// tell a header row from a pair.
func namespaceFormats(cmd *cobra.Command, g *client.Globals, c idmapv1.IdMapServiceClient, namespace, from, to string) ([2]*idrule.Format, error) {
	var out [2]*idrule.Format
	ctx, cancel := g.CallCtx(cmd.Context())
	defer cancel()
	resp, err := c.GetNamespace(ctx, &idmapv1.GetNamespaceRequest{Name: namespace})
	if err != nil {
		return out, g.RPCError("namespace "+namespace, err)
	}
	for i, name := range []string{from, to} {
		if name == "" {
			continue // a member list has one column
		}
		var known []string
		for j, f := range resp.GetNamespace().GetFormats() {
			known = append(known, f.GetName())
			if f.GetName() == name {
				if out[i], err = idrule.NewFormat(fmt.Sprintf("formats[%d]", j), f); err != nil {
					return out, exit.Usagef("namespace %s, format %s: %w", namespace, name, err)
				}
			}
		}
		if out[i] == nil {
			return out, exit.Usagef("namespace %s has no format %q; its formats are %s", namespace, name, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// firstRow decides what the first row of an import is.
type firstRow struct {
	formats  [2]*idrule.Format
	noHeader bool
}

// isHeader reports whether rec, the first row, is a header: unless
// --no-header, it must be one, and a row that is a valid pair of ids is
// refused unless its cells name the two formats.
func (f firstRow) isHeader(rec []string) (bool, error) {
	if f.noHeader {
		return false, nil
	}
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-") }
	from, to := f.formats[0], f.formats[1]
	if to == nil {
		// A member list: one column of ids.
		switch {
		case norm(rec[0]) == from.Name():
			return true, nil
		case from.Valid(strings.TrimSpace(rec[0])):
			return false, fmt.Errorf("line 1 (%s) is a valid %s id, not a header; pass --no-header to import it as a member, or add a header row naming the column %s", rec[0], from.Name(), from.Name())
		}
		return true, nil
	}
	a, b := norm(rec[0]), norm(rec[1])
	switch {
	case a == from.Name() && b == to.Name():
		return true, nil
	case a == to.Name() && b == from.Name():
		return false, fmt.Errorf("line 1 names the columns %s,%s, the other way round from --from %s --to %s; swap the flags or the columns", rec[0], rec[1], from.Name(), to.Name())
	case from.Valid(strings.TrimSpace(rec[0])) && to.Valid(strings.TrimSpace(rec[1])):
		return false, fmt.Errorf("line 1 (%s,%s) is a pair of valid %s and %s ids, not a header; pass --no-header to import it as a pair, or add a header row naming the columns %s,%s",
			rec[0], rec[1], from.Name(), to.Name(), from.Name(), to.Name())
	}
	return true, nil
}

// streamErr returns the server's status when a Send fails because the
// server ended the stream.
func streamErr(stream idmapv1.IdMapService_ImportPairsClient, err error) error {
	if errors.Is(err, io.EOF) {
		if _, rerr := stream.CloseAndRecv(); rerr != nil {
			return rerr
		}
	}
	return err
}

func printImport(w io.Writer, r *idmapv1.ImportPairsResponse) {
	state := "committed"
	if !r.GetCommitted() {
		state = "NOT committed"
	}
	fmt.Fprintf(w, "%s: %d pairs received, %d inserted, %d unchanged, %d removed; table now %d pairs (generation %d)\n",
		state, r.GetReceived(), r.GetInserted(), r.GetUnchanged(), r.GetRemoved(), r.GetTableSize(), r.GetGeneration())
	if len(r.GetConflicts()) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d conflicts:\n", len(r.GetConflicts()))
	t := output.NewTable(w, "LINE", "PAIR", "CLASHES WITH", "WHY")
	for i, c := range r.GetConflicts() {
		if i == 20 {
			t.Row("…", fmt.Sprintf("%d more (use -o json for all)", len(r.GetConflicts())-20), "", "")
			break
		}
		t.Row(strconv.FormatInt(c.GetLine(), 10), c.GetPair().GetFrom()+" → "+c.GetPair().GetTo(),
			c.GetExisting().GetFrom()+" → "+c.GetExisting().GetTo(), c.GetMessage())
	}
	t.Flush()
}

func newTranslateCmd(g *client.Globals) *cobra.Command {
	var from, to, file string
	return client.ServiceCommand(g, idmapv1.NewIdMapServiceClient, "translate NAMESPACE --from FORMAT --to FORMAT [ID...]", cobra.MinimumNArgs(1), client.Help{
		Short: "Translate ids (arguments, or one per line of --file)",
		Example: `  seam idmap translate customer --from uuid --to legacy-int 0b9e5c8e-3f0d-4a4e-9d43-1f3c2a6f6b01
  seam idmap translate customer --from legacy-int --to crm-code --file ids.txt -o json`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&from, "from", "", "format of the ids given")
			fs.StringVar(&to, "to", "", "format to translate into")
			fs.StringVar(&file, "file", "", "file with one id per line (- for standard input)")
		},
	}, func(cmd *cobra.Command, args []string, ic idmapv1.IdMapServiceClient) error {
		ids := args[1:]
		if file != "" {
			data, err := client.ReadInput(cmd, file)
			if err != nil {
				return err
			}
			for _, l := range bytes.Split(data, []byte("\n")) {
				if s := strings.TrimSpace(string(l)); s != "" {
					ids = append(ids, s)
				}
			}
		}
		if len(ids) == 0 {
			return exit.Usagef("give ids as arguments or --file")
		}
		return client.Show(cmd, g, "translate", ic.Translate, &idmapv1.TranslateRequest{Namespace: args[0], FromFormat: from, ToFormat: to, Ids: ids},
			func(w io.Writer, resp *idmapv1.TranslateResponse) error {
				t := output.NewTable(w, strings.ToUpper(from), strings.ToUpper(to), "STATUS")
				for i, id := range ids {
					t.Row(id, output.OrDash(resp.GetValues()[i]), output.Enum(resp.GetStatuses()[i], "TRANSLATE_STATUS_"))
				}
				if err := t.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(w, "%d hits, %d misses, %d invalid\n", resp.GetHits(), resp.GetMisses(), resp.GetInvalid())
				return nil
			})
	})
}

func newIdmapStatsCmd(g *client.Globals) *cobra.Command {
	var namespace string
	return client.ServiceCommand(g, idmapv1.NewIdMapServiceClient, "stats", cobra.NoArgs, client.Help{
		Short:   "Hit, miss and invalid counts per namespace, format pair and direction",
		Example: "  seam idmap stats --namespace customer",
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&namespace, "namespace", "", "only this namespace")
		},
	}, func(cmd *cobra.Command, _ []string, ic idmapv1.IdMapServiceClient) error {
		return client.Show(cmd, g, "idmap stats", ic.GetStats, &idmapv1.GetStatsRequest{Namespace: namespace},
			func(w io.Writer, resp *idmapv1.GetStatsResponse) error {
				t := output.NewTable(w, "NAMESPACE", "FROM", "TO", "HITS", "MISSES", "INVALID", "HIT RATE")
				for _, c := range resp.GetCounters() {
					total := c.GetHits() + c.GetMisses() + c.GetInvalid()
					rate := "-"
					if total > 0 {
						rate = fmt.Sprintf("%.1f%%", 100*float64(c.GetHits())/float64(total))
					}
					t.Row(c.GetNamespace(), c.GetFromFormat(), c.GetToFormat(), strconv.FormatInt(c.GetHits(), 10), strconv.FormatInt(c.GetMisses(), 10), strconv.FormatInt(c.GetInvalid(), 10), rate)
				}
				return t.Flush()
			})
	})
}
