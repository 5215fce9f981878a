package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/interop"
	"github.com/seamdata/seam/core/interop/jsonschema"
	"github.com/seamdata/seam/core/interop/odcs"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// importFlags choose what a foreign document becomes.
type importFlags struct {
	from, subject, owner, object string
	outDir, canonical            string
	strict                       bool
}

func (f *importFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.from, "from", "", "format of FILE: odcs or jsonschema (default: by its name, *.odcs.yaml or *.schema.json)")
	fs.StringVar(&f.subject, "subject", "", "subject, when the document does not name one (JSON Schema, ODCS without seamSubject)")
	fs.StringVar(&f.owner, "owner", "", "owner, when the document names no team")
	fs.StringVar(&f.object, "table", "", "ODCS: import only the schema object (table) of this name")
	fs.StringVar(&f.object, "object", "", "ODCS: same as --table")
	fs.BoolVar(&f.strict, "strict", false, "refuse the document if anything of it is dropped or approximated (JSON Schema: annotations and unknown keywords; its assertions Seam cannot check are refused anyway)")
}

// convert turns a document into contracts and the report of what did not
// carry over; it is the whole of `seam contract import`, and what
// register and check do locally for a file in a foreign format.
func (f *importFlags) convert(data []byte, file string, format interop.Format) ([]*contractv1.Contract, interop.Report, error) {
	switch format {
	case interop.FormatODCS:
		res, err := odcs.Import(data, odcs.ImportOptions{Source: file, Subject: f.subject, Owner: f.owner, Object: f.object, Strict: f.strict})
		if res == nil {
			return nil, interop.Report{}, err
		}
		var out []*contractv1.Contract
		for _, c := range res.Contracts {
			out = append(out, c.Contract)
		}
		return out, res.Report, err
	case interop.FormatJSONSchema:
		res, err := jsonschema.Import(data, jsonschema.ImportOptions{Source: file, Subject: f.subject, Owner: f.owner, Strict: f.strict})
		if res == nil {
			return nil, interop.Report{}, err
		}
		return []*contractv1.Contract{res.Contract}, res.Report, err
	}
	c, err := contract.Load(data, file)
	if err != nil {
		return nil, interop.Report{}, err
	}
	return []*contractv1.Contract{c}, interop.Report{}, nil
}

var documentFormats = map[interop.Format]registryv1.ContractFormat{
	interop.FormatODCS:       registryv1.ContractFormat_CONTRACT_FORMAT_ODCS,
	interop.FormatJSONSchema: registryv1.ContractFormat_CONTRACT_FORMAT_JSON_SCHEMA,
}

// loadDocument reads a contract file for register and check: Seam YAML is
// sent as a contract; ODCS (*.odcs.yaml) and JSON Schema (*.schema.json)
// are sent as the document itself, which the registry converts, and are
// converted here too for the subject and the report (on stderr).
func (f *importFlags) loadDocument(cmd *cobra.Command, data []byte, file string) (*contractv1.Contract, *registryv1.ContractDocument, error) {
	format := interop.FormatOf(file)
	if format == interop.FormatSeam {
		c, err := contract.Load(data, file)
		return c, nil, err
	}
	cs, rep, err := f.convert(data, file, format)
	if err != nil {
		return nil, nil, err
	}
	if len(cs) != 1 {
		return nil, nil, fmt.Errorf("%s has %d schema objects; register one with --table NAME, or import them all with seam contract import --out-dir DIR", file, len(cs))
	}
	printNotes(cmd.ErrOrStderr(), file, rep.Notes)
	return cs[0], &registryv1.ContractDocument{Format: documentFormats[format], Content: string(data), Owner: f.owner, Subject: f.subject, Object: f.object}, nil
}

func printNotes(w io.Writer, file string, notes []interop.Note) {
	if len(notes) == 0 {
		return
	}
	fmt.Fprintf(w, "%s: %d part(s) did not carry over exactly:\n", file, len(notes))
	t := output.NewTable(w, "KIND", "PATH", "NOTE")
	for _, n := range notes {
		t.Row(n.Kind.String(), n.Path, n.Message)
	}
	_ = t.Flush()
}

func newContractImportCmd(g *client.Globals) *cobra.Command {
	var f importFlags
	return g.Local("import FILE", cobra.ExactArgs(1), client.Help{
		Short: "Convert an ODCS contract or a JSON Schema into Seam contracts",
		Long: `Convert an Open Data Contract Standard v3 contract (each schema object
becomes one Seam contract) or a JSON Schema of one record (draft 2020-12 or
draft-07) into Seam contract YAML on standard output. What Seam cannot
represent is listed on standard error, never dropped silently; --strict
exits 1 instead when anything would be dropped or approximated. A JSON
Schema keyword that asserts what Seam cannot check (allOf, anyOf, oneOf,
not, if, patternProperties, uniqueItems, contains, a format other than
date-time, date, uuid and ipv4, ...) exits 1 naming its JSON pointer, with
or without --strict: the contract would accept records the schema refuses. Runs
offline: register the result with seam contract register, or register the
document directly (seam contract register -f orders.odcs.yaml).`,
		Example: `  seam contract import orders.odcs.yaml > shop_orders.yaml
  seam contract import --from jsonschema orders.schema.json --subject shop.orders --owner team-checkout
  seam contract import --strict --object orders contract.odcs.yaml`,
		Flags: func(fs *pflag.FlagSet) {
			f.add(fs)
			fs.StringVar(&f.outDir, "out-dir", "", "write each contract to DIR/SUBJECT.yaml instead of standard output (needed when the document has several tables)")
			fs.StringVar(&f.canonical, "canonical", "", "also write an identity canonical model NAME and a mapping onto it, so the contract can be ingested at once")
		},
	}, func(cmd *cobra.Command, args []string) error {
		format := interop.FormatOf(args[0])
		if f.from != "" {
			var err error
			if format, err = interop.ParseFormat(f.from); err != nil || format == interop.FormatSeam {
				return exit.Usagef("--from %q: want odcs or jsonschema", f.from)
			}
		}
		if format == interop.FormatSeam {
			return exit.Usagef("%s: say what it is with --from odcs or --from jsonschema (or name it *.odcs.yaml or *.schema.json)", args[0])
		}
		data, err := client.ReadInput(cmd, args[0])
		if err != nil {
			return err
		}
		cs, rep, err := f.convert(data, args[0], format)
		var loss *interop.LossError
		if errors.As(err, &loss) {
			printNotes(cmd.ErrOrStderr(), args[0], rep.Notes)
			return exit.Failf("%s: strict import refused: %d part(s) have no exact Seam equivalent", args[0], len(loss.Notes))
		}
		if err != nil {
			return exit.Failf("%w", err)
		}
		printNotes(cmd.ErrOrStderr(), args[0], rep.Notes)
		return f.write(cmd, g.JSON(), args[0], cs)
	})
}

// write puts the imported contracts where the flags say: one on standard
// output, or each in its own file under --out-dir, with the identity
// canonical model beside it when --canonical names one.
func (f *importFlags) write(cmd *cobra.Command, asJSON bool, file string, cs []*contractv1.Contract) error {
	var models []*contractv1.CanonicalModel
	if f.canonical != "" {
		if len(cs) != 1 {
			return exit.Usagef("%s: --canonical makes one canonical model for one contract, and the document has %d tables; choose one with --table NAME", file, len(cs))
		}
		m := contract.Identity(cs[0], f.canonical)
		if m == nil {
			return exit.Failf("%s: the contract already maps onto canonical model %q; --canonical would replace that mapping", file, cs[0].GetMapping().GetCanonical())
		}
		if problems := contract.ValidateCanonicalModel(m); len(problems) > 0 {
			return exit.Failf("%s: the identity canonical model %s is not valid: %v", file, f.canonical, problems)
		}
		models = append(models, m)
	}
	if f.outDir == "" {
		if len(cs) > 1 {
			var names []string
			for _, c := range cs {
				names = append(names, c.GetLabels()["odcs.schema.name"]+" → "+c.GetSubject())
			}
			return exit.Usagef("%s has %d tables (%s), and a registered contract is one table: choose one with --table NAME, or write each to its own file with --out-dir DIR", file, len(cs), strings.Join(names, ", "))
		}
		if len(models) > 0 {
			return exit.Usagef("--canonical writes two documents (the contract and the canonical model %s); say where with --out-dir DIR", f.canonical)
		}
		return printContracts(cmd.OutOrStdout(), asJSON, cs)
	}
	if err := os.MkdirAll(f.outDir, 0o755); err != nil {
		return exit.Failf("%w", err)
	}
	ext := ".yaml"
	if asJSON {
		ext = ".json"
	}
	put := func(name string, m proto.Message) error {
		var out []byte
		var err error
		if asJSON {
			var v any
			if v, err = contract.Plain(m); err == nil {
				out, err = json.MarshalIndent(v, "", "  ")
				out = append(out, '\n')
			}
		} else {
			out, err = contract.MarshalYAML(m)
		}
		if err != nil {
			return exit.Failf("%s: %w", name, err)
		}
		p := filepath.Join(f.outDir, name+ext)
		if err := os.WriteFile(p, out, 0o644); err != nil {
			return exit.Failf("%w", err)
		}
		fmt.Fprintln(cmd.OutOrStdout(), p)
		return nil
	}
	for _, m := range models {
		if err := put(m.GetName()+".canonical", m); err != nil {
			return err
		}
	}
	for _, c := range cs {
		if err := put(c.GetSubject(), c); err != nil {
			return err
		}
	}
	return nil
}

// printContracts writes contracts as Seam YAML documents (or a JSON list).
func printContracts(w io.Writer, asJSON bool, cs []*contractv1.Contract) error {
	var all []any
	for _, c := range cs {
		v, err := contract.Plain(c)
		if err != nil {
			return err
		}
		all = append(all, v)
	}
	if asJSON {
		return output.Value(w, all)
	}
	for i, v := range all {
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		out, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}

func newContractExportCmd(g *client.Globals) *cobra.Command {
	var to string
	var asJSON bool
	return client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "export --to odcs SUBJECT[@VERSION]", cobra.ExactArgs(1), client.Help{
		Short: "Write a registered contract as an ODCS v3.1.0 contract",
		Long: `Write a registered contract version (default: the one active now) as an
Open Data Contract Standard v3.1.0 contract. Seam-only parts (identifiers,
layouts, the mapping, policies) travel as seam* custom properties, so
importing the export gives back the same contract.`,
		Example: `  seam contract export --to odcs shop.orders > shop_orders.odcs.yaml
  seam contract export --to odcs shop.orders@2 --json`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&to, "to", "odcs", "target format: odcs")
			fs.BoolVar(&asJSON, "json", false, "write JSON instead of YAML")
		},
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		if strings.ToLower(to) != "odcs" {
			return exit.Usagef("--to %q: Seam exports to odcs", to)
		}
		subject, ver, _ := strings.Cut(args[0], "@")
		var version int64
		if ver != "" {
			var err error
			if version, err = strconv.ParseInt(ver, 10, 32); err != nil || version < 1 {
				return exit.Usagef("%q: the version after @ is a number from 1", args[0])
			}
		}
		ctx, cancel := g.CallCtx(cmd.Context())
		defer cancel()
		resp, err := rc.GetContract(ctx, &registryv1.GetContractRequest{Subject: subject, Version: int32(version)})
		if err != nil {
			return g.RPCError("get "+args[0], err)
		}
		v := resp.GetVersion()
		out, _, err := odcs.Export(v.GetContract(), odcs.ExportOptions{Version: v.GetVersion(), JSON: asJSON})
		if err != nil {
			return exit.Failf("%w", err)
		}
		_, err = cmd.OutOrStdout().Write(out)
		return err
	})
}
