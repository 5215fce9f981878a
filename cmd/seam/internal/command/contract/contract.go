// Package contract holds `seam contract` (check, register and read source
// contracts) and `seam blast-radius`.
package contract

import (
	"fmt"
	"github.com/seamdata/seam/cmd/seam/internal/command/blastradius"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/dryrun"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// effective is when a version is to take effect: an RFC 3339 time, or a
// duration the registry adds to its own clock ("+14d"), so a version
// registered with exactly its notice owes nothing more.
type effective struct {
	at *timestamppb.Timestamp
	in string
}

// parseEffective reads --effective: RFC 3339, or "+DURATION" from the
// registry's now ("+336h", "+14d").
func parseEffective(s string) (effective, error) {
	if s == "" {
		return effective{}, nil
	}
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		if _, err := contract.ParseNoticePeriod(rest); err != nil {
			return effective{}, exit.Usagef("--effective %q: %w", s, err)
		}
		return effective{in: rest}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return effective{}, exit.Usagef("--effective %q: give RFC 3339 (2026-12-13T00:00:00Z) or +DURATION (+336h, +14d)", s)
	}
	return effective{at: timestamppb.New(t)}, nil
}

// New returns the `seam contract` group.
func New(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "contract",
		Short: "Check, register and read source contracts",
	}
	cmd.AddCommand(newContractCheckCmd(g), newContractRegisterCmd(g), newContractGetCmd(g),
		newContractListCmd(g), newContractHistoryCmd(g), newContractDiffCmd(g),
		newContractImportCmd(g), newContractExportCmd(g), newContractInferCmd(g))
	return cmd
}

type registerFlags struct {
	file          string
	effective     string
	reason        string
	dataEffective string
	dataReason    string
	imp           importFlags                  // --owner, --subject, --table of ODCS and JSON Schema files
	doc           *registryv1.ContractDocument // set for ODCS and JSON Schema files
}

// sent is the contract to put in the request: none when the document goes.
func (f *registerFlags) sent(c *contractv1.Contract) *contractv1.Contract {
	if f.doc != nil {
		return nil
	}
	return c
}

func (f *registerFlags) add(fs *pflag.FlagSet) {
	fs.StringVarP(&f.file, "file", "f", "", "contract YAML (- for standard input), or give FILE as the argument; *.odcs.yaml and *.schema.json are sent as ODCS and JSON Schema")
	fs.StringVar(&f.effective, "effective", "", "effective time: RFC 3339, or +DURATION from the registry's now, such as +14d (default: now)")
	fs.StringVar(&f.reason, "override-reason", "", "admin only: waive the notice period, with this reason (kept in the audit history)")
	fs.StringVar(&f.dataEffective, "data-effective", "", "contracts with a partition time: judge partitions from this data date on (RFC 3339 or YYYY-MM-DD, UTC; default: the effective time)")
	fs.StringVar(&f.dataReason, "data-effective-reason", "", "admin only: why the version applies from a data date already past (kept in the audit history)")
	fs.StringVar(&f.imp.owner, "owner", "", "ODCS and JSON Schema files: the owner, when the document names no team")
	fs.StringVar(&f.imp.subject, "subject", "", "ODCS and JSON Schema files: the subject, when the document does not name one")
	fs.StringVar(&f.imp.object, "table", "", "ODCS files of several tables: the schema object (table) to register")
}

// dataEffective is the --data-effective time: RFC 3339, or a UTC date.
func (f *registerFlags) dataEffectiveTime() (*timestamppb.Timestamp, error) {
	if f.dataEffective == "" {
		if f.dataReason != "" {
			return nil, exit.Usagef("--data-effective-reason without --data-effective: give the data date the version applies from")
		}
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if t, err := time.Parse(layout, f.dataEffective); err == nil {
			return timestamppb.New(t), nil
		}
	}
	return nil, exit.Usagef("--data-effective %q: give an RFC 3339 time or a date such as 2026-10-21 (UTC)", f.dataEffective)
}

// load reads the contract and the flags into the request register sends
// (check asks about the same); c is the contract read, also when the
// request carries its document instead.
func (f *registerFlags) load(cmd *cobra.Command, args []string) (c *contractv1.Contract, req *registryv1.RegisterContractRequest, err error) {
	c, err = client.ReadDocument(cmd, args, f.file, func(data []byte, path string) (c *contractv1.Contract, err error) {
		c, f.doc, err = f.imp.loadDocument(cmd, data, path)
		return c, err
	})
	if err != nil {
		return nil, nil, err
	}
	when, err := parseEffective(f.effective)
	if err != nil {
		return nil, nil, err
	}
	dataAt, err := f.dataEffectiveTime()
	if err != nil {
		return nil, nil, err
	}
	req = &registryv1.RegisterContractRequest{Contract: f.sent(c), Document: f.doc, EffectiveTime: when.at, EffectiveIn: when.in,
		DataEffectiveTime: dataAt, DataEffectiveReason: f.dataReason}
	if f.reason != "" {
		req.Override = &registryv1.NoticeOverride{Reason: f.reason}
	}
	return c, req, nil
}

// checkRequest asks check about what register would send.
func checkRequest(r *registryv1.RegisterContractRequest) *registryv1.CheckContractRequest {
	return &registryv1.CheckContractRequest{Contract: r.GetContract(), Document: r.GetDocument(), EffectiveTime: r.GetEffectiveTime(), EffectiveIn: r.GetEffectiveIn(),
		Override: r.GetOverride(), DataEffectiveTime: r.GetDataEffectiveTime(), DataEffectiveReason: r.GetDataEffectiveReason()}
}

func newContractCheckCmd(g *client.Globals) *cobra.Command {
	var f registerFlags
	var sample int
	return g.Command("check FILE", cobra.MaximumNArgs(1), client.Help{
		Short: "Dry-run a contract version: changes, verdict, notice owed, consumers affected",
		Long: `Classify a proposed contract version against the registered ones without
registering it. Exits 0 when it could be registered as it stands (additive,
or breaking with enough notice and a migration), 1 when it could not, 2 on
usage or connection errors, 3 when the contract is not valid — so a
source team can run it in its own CI.

For a registered subject it also runs the proposed version (its checks,
mapping and identifier translations) on a sample of the subject's
quarantined records, the newest first, and says how many would pass; the
dry run does not change the exit code.`,
		Example: `  seam contract check shop_orders_v2.yaml
  seam contract check shop_orders_v2.yaml --effective +14d -o json`,
		Flags: func(fs *pflag.FlagSet) {
			f.add(fs)
			fs.IntVar(&sample, "dry-run", dryrun.DefaultSample, "run the version on this many of the subject's quarantined records and say how many would pass (0: skip)")
		},
	}, func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
		c, req, err := f.load(cmd, args)
		if err != nil {
			return err
		}
		ctx, cancel := g.CallCtx(cmd.Context())
		defer cancel()
		resp, err := registryv1.NewRegistryServiceClient(conn).CheckContract(ctx, checkRequest(req))
		if err != nil {
			return g.DocumentError("check "+c.GetSubject(), err)
		}
		dry := runCheckDryRun(ctx, conn, c, resp, sample)
		if g.JSON() {
			if err := printCheckJSON(cmd.OutOrStdout(), resp, dry); err != nil {
				return err
			}
		} else {
			if err := printCheck(cmd.OutOrStdout(), c.GetSubject(), resp, f.reason); err != nil {
				return err
			}
			printDryRun(cmd.OutOrStdout(), dry)
		}
		switch resp.GetVerdict() {
		case registryv1.Verdict_VERDICT_INVALID:
			return exit.Invalidf("%s v%d is not a valid contract (INVALID)", c.GetSubject(), resp.GetVersion())
		case registryv1.Verdict_VERDICT_REFUSED:
			return exit.Failf("%s v%d could not be registered as it stands (%s)", c.GetSubject(), resp.GetVersion(), output.Enum(resp.GetVerdict(), "VERDICT_"))
		}
		return nil
	})
}

// printCheck writes the registry's verdict; override is the reason of
// --override-reason ("" without it).
func printCheck(w io.Writer, subject string, r *registryv1.CheckContractResponse, override string) error {
	fmt.Fprintf(w, "%s: proposed v%d against v%d: %s\n", subject, r.GetVersion(), r.GetLatestVersion(), output.Enum(r.GetVerdict(), "VERDICT_"))
	waived := override != "" && !slices.ContainsFunc(r.GetProblems(), func(p *registryv1.Problem) bool {
		return p.GetReason() == "OVERRIDE_REQUIRES_ADMIN" || p.GetReason() == "INVALID_CONTRACT"
	})
	switch {
	case r.GetNoticeOwed() == "":
	case waived:
		fmt.Fprintf(w, "notice: none owed, the %s notice is waived by the override (%s)\n", r.GetNoticeOwed(), override)
	default:
		fmt.Fprintf(w, "notice owed: %s (earliest effective time %s)\n", r.GetNoticeOwed(), output.Time(r.GetEarliestEffectiveTime()))
	}
	if len(r.GetChanges()) > 0 {
		fmt.Fprintln(w, "\nchanges:")
		t := output.NewTable(w, "LEVEL", "RULE", "PATH", "OLD", "NEW")
		for _, c := range r.GetChanges() {
			t.Row(output.Enum(c.GetLevel(), "CHANGE_LEVEL_"), c.GetRule(), c.GetPath(), output.OrDash(c.GetOldValue()), output.OrDash(c.GetNewValue()))
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if len(r.GetProblems()) > 0 {
		fmt.Fprintln(w, "\nwhat stops it:")
		for _, p := range r.GetProblems() {
			fmt.Fprintf(w, "  %s at %s: %s\n", p.GetReason(), output.OrDash(p.GetPath()), p.GetMessage())
		}
	}
	printMigration(w, r.GetMigration())
	return blastradius.PrintAffected(w, "consumers affected", r.GetAffectedConsumers())
}

// printMigration lists the translations idmap cannot run yet.
func printMigration(w io.Writer, trs []*registryv1.TranslationReadiness) {
	for _, t := range trs {
		if !t.GetReady() {
			fmt.Fprintf(w, "\nmigration not ready: %s (%s→%s): %s\n  a version scheduled later waits SCHEDULED past its effective time until idmap can run this migration\n",
				t.GetField(), t.GetFrom(), t.GetTo(), t.GetMessage())
		}
	}
}

func newContractRegisterCmd(g *client.Globals) *cobra.Command {
	var f registerFlags
	return client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "register FILE", cobra.MaximumNArgs(1), client.Help{
		Short: "Register a new contract version",
		Long: `Register a contract version. An additive version takes effect at once (or
at --effective). A breaking version needs --effective at least the subject's
notice period ahead and a mapping to the canonical model; it is SCHEDULED and
becomes ACTIVE on its own at that time. An admin may waive the notice with
--override-reason.

For a contract with a partition time, --data-effective says from which
data date the version judges partitions (default: its effective time); a
date already past, the usual incident fix, needs the admin role and
--data-effective-reason, kept in the audit history. Partitions before it
stay judged by the earlier version, late files included.`,
		Example: `  seam contract register shop_orders_v1.yaml
  seam contract register shop_orders_v2.yaml --effective +14d
  seam contract register shop_orders_v2.yaml --override-reason "INC-42: source already switched to UUIDs"
  seam contract register payments_v2.yaml --override-reason "INC-20: the source changed" \
      --data-effective 2026-10-21 --data-effective-reason "INC-20: the change started on the 21st"`,
		Flags: f.add,
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		c, req, err := f.load(cmd, args)
		if err != nil {
			return err
		}
		return client.Send(cmd, g, "register "+c.GetSubject(), rc.RegisterContract, req, printRegistered)
	})
}

func newContractGetCmd(g *client.Globals) *cobra.Command {
	var version int32
	var at string
	return client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "get SUBJECT", cobra.ExactArgs(1), client.Help{
		Short: "Show a contract version (default: the one active now)",
		Example: `  seam contract get shop.orders
  seam contract get shop.orders --version 1 -o json
  seam contract get shop.orders --at 2026-11-01T00:00:00Z`,
		Flags: func(fs *pflag.FlagSet) {
			fs.Int32Var(&version, "version", 0, "version number (default: the active one)")
			fs.StringVar(&at, "at", "", "the version active at this RFC 3339 time")
		},
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		req := &registryv1.GetContractRequest{Subject: args[0], Version: version}
		if at != "" {
			t, err := time.Parse(time.RFC3339, at)
			if err != nil {
				return exit.Usagef("--at %q: give an RFC 3339 time", at)
			}
			req.AtTime = timestamppb.New(t)
		}
		return client.Show(cmd, g, "get "+args[0], rc.GetContract, req,
			func(w io.Writer, resp *registryv1.GetContractResponse) error {
				v := resp.GetVersion()
				fmt.Fprintf(w, "%s v%d  %s  effective %s  by %s\n", v.GetSubject(), v.GetVersion(), output.Enum(v.GetStatus(), "VERSION_STATUS_"), output.Time(v.GetEffectiveTime()), v.GetAuthor())
				c := v.GetContract()
				fmt.Fprintf(w, "owner %s, compatibility %s, notice %s\n\n", c.GetOwner(), output.Enum(c.GetCompatibility(), "COMPATIBILITY_"), output.OrDash(c.GetNoticePeriod()))
				return output.Fields(w, c.GetFields())
			})
	})
}

func newContractListCmd(g *client.Globals) *cobra.Command {
	return client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "list [SUBJECT]", cobra.MaximumNArgs(1), client.Help{
		Short: "List subjects, or the versions of one subject",
		Example: `  seam contract list
  seam contract list shop.orders -o json`,
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		if len(args) == 0 {
			return client.Show(cmd, g, "list subjects", rc.ListSubjects, &registryv1.ListSubjectsRequest{},
				func(w io.Writer, resp *registryv1.ListSubjectsResponse) error {
					t := output.NewTable(w, "SUBJECT", "OWNER", "COMPATIBILITY", "NOTICE", "ACTIVE", "LATEST")
					for _, s := range resp.GetSubjects() {
						t.Row(s.GetName(), s.GetOwner(), output.Enum(s.GetCompatibility(), "COMPATIBILITY_"), output.OrDash(s.GetNoticePeriod()),
							"v"+strconv.Itoa(int(s.GetActiveVersion())), "v"+strconv.Itoa(int(s.GetLatestVersion())))
					}
					return t.Flush()
				})
		}
		return client.Show(cmd, g, "list "+args[0], rc.ListContracts, &registryv1.ListContractsRequest{Subject: args[0]},
			func(w io.Writer, resp *registryv1.ListContractsResponse) error {
				t := output.NewTable(w, "VERSION", "STATUS", "EFFECTIVE", "CREATED", "AUTHOR", "BREAKING")
				for _, v := range resp.GetVersions() {
					t.Row("v"+strconv.Itoa(int(v.GetVersion())), output.Enum(v.GetStatus(), "VERSION_STATUS_"), output.Time(v.GetEffectiveTime()), output.Time(v.GetCreateTime()), v.GetAuthor(), output.YesNo(v.GetBreaking()))
				}
				return t.Flush()
			})
	})
}

func newContractHistoryCmd(g *client.Globals) *cobra.Command {
	return client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "history SUBJECT", cobra.ExactArgs(1), client.Help{
		Short:   "Show the audit history of a subject",
		Example: "  seam contract history shop.orders",
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		return client.Show(cmd, g, "history of "+args[0], rc.GetHistory, &registryv1.GetHistoryRequest{Subject: args[0]},
			func(w io.Writer, resp *registryv1.GetHistoryResponse) error {
				t := output.NewTable(w, "TIME", "WHO", "ACTION", "VERSION", "DETAIL")
				for _, e := range resp.GetEntries() {
					t.Row(output.Time(e.GetTime()), e.GetPrincipal(), e.GetAction(), "v"+strconv.Itoa(int(e.GetVersion())), output.OrDash(e.GetDetail()))
				}
				return t.Flush()
			})
	})
}

func newContractDiffCmd(g *client.Globals) *cobra.Command {
	return client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "diff SUBJECT FROM TO", cobra.ExactArgs(3), client.Help{
		Short:   "Classify the changes between two registered versions",
		Example: "  seam contract diff shop.orders 1 2",
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		from, err1 := strconv.Atoi(strings.TrimPrefix(args[1], "v"))
		to, err2 := strconv.Atoi(strings.TrimPrefix(args[2], "v"))
		if err1 != nil || err2 != nil {
			return exit.Usagef("FROM and TO are version numbers, for example: seam contract diff %s 1 2", args[0])
		}
		return client.Show(cmd, g, "diff "+args[0], rc.DiffContracts, &registryv1.DiffContractsRequest{Subject: args[0], FromVersion: int32(from), ToVersion: int32(to)},
			func(w io.Writer, resp *registryv1.DiffContractsResponse) error {
				verdict := "additive"
				if resp.GetBreaking() {
					verdict = "BREAKING"
				}
				fmt.Fprintf(w, "%s v%d → v%d: %s\n", args[0], from, to, verdict)
				t := output.NewTable(w, "LEVEL", "RULE", "PATH", "OLD", "NEW")
				for _, c := range resp.GetChanges() {
					t.Row(output.Enum(c.GetLevel(), "CHANGE_LEVEL_"), c.GetRule(), c.GetPath(), output.OrDash(c.GetOldValue()), output.OrDash(c.GetNewValue()))
				}
				return t.Flush()
			})
	})
}

// printRegistered says what registering a contract did.
func printRegistered(w io.Writer, resp *registryv1.RegisterContractResponse) error {
	v := resp.GetVersion()
	if resp.GetUnchanged() {
		fmt.Fprintf(w, "%s v%d is unchanged; nothing registered\n", v.GetSubject(), v.GetVersion())
		return nil
	}
	fmt.Fprintf(w, "%s v%d registered: %s, effective %s\n", v.GetSubject(), v.GetVersion(), output.Enum(v.GetStatus(), "VERSION_STATUS_"), output.Time(v.GetEffectiveTime()))
	if v.GetOverride() != nil {
		fmt.Fprintf(w, "notice waived by %s: %s\n", v.GetOverrideBy(), v.GetOverride().GetReason())
	}
	if v.GetDataEffectiveReason() != "" {
		fmt.Fprintf(w, "judges partitions from %s on, backdated by %s: %s\n", output.Time(v.GetDataEffectiveTime()), v.GetDataEffectiveBy(), v.GetDataEffectiveReason())
	}
	printMigration(w, resp.GetMigration())
	return blastradius.PrintAffected(w, "announced to", resp.GetAffectedConsumers())
}
