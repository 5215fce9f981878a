// Package registry holds the registry's client groups besides `seam
// contract`: `seam canonical` registers and reads the canonical models
// adapters map into, `seam consumer` declares the downstream consumers
// whose lineage decides who is told of a change, and `seam events` lists
// and watches the registry's ordered event stream.
package registry

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/contract"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// NewCanonical returns the `seam canonical` group.
func NewCanonical(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "canonical",
		Short: "Register and read canonical models (what adapters map into)",
	}
	var file string
	register := client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "register FILE", cobra.MaximumNArgs(1), client.Help{
		Short:   "Register a new version of a canonical model",
		Example: "  seam canonical register commerce_order.yaml",
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&file, "file", "f", "", "canonical model YAML (- for standard input); or give FILE as the argument")
		},
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		m, err := client.ReadDocument(cmd, args, file, contract.LoadCanonicalModel)
		if err != nil {
			return err
		}
		return client.Send(cmd, g, "register canonical model "+m.GetName(), rc.RegisterCanonicalModel, &registryv1.RegisterCanonicalModelRequest{Model: m},
			func(w io.Writer, resp *registryv1.RegisterCanonicalModelResponse) error {
				v := resp.GetVersion()
				if resp.GetUnchanged() {
					fmt.Fprintf(w, "%s v%d is unchanged; nothing registered\n", v.GetName(), v.GetVersion())
					return nil
				}
				fmt.Fprintf(w, "%s v%d registered (%d fields)\n", v.GetName(), v.GetVersion(), len(v.GetModel().GetFields()))
				return nil
			})
	})

	var version int32
	get := client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "get NAME", cobra.ExactArgs(1), client.Help{
		Short:   "Show a canonical model version (default: the latest)",
		Example: "  seam canonical get commerce.order -o json",
		Flags: func(fs *pflag.FlagSet) {
			fs.Int32Var(&version, "version", 0, "version number (default: the latest)")
		},
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		return client.Show(cmd, g, "get canonical model "+args[0], rc.GetCanonicalModel, &registryv1.GetCanonicalModelRequest{Name: args[0], Version: version},
			func(w io.Writer, resp *registryv1.GetCanonicalModelResponse) error {
				v := resp.GetVersion()
				fmt.Fprintf(w, "%s v%d, owner %s, registered %s by %s\n\n", v.GetName(), v.GetVersion(), output.OrDash(v.GetModel().GetOwner()), output.Time(v.GetCreateTime()), v.GetAuthor())
				return output.Fields(w, v.GetModel().GetFields())
			})
	})

	list := client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "list", cobra.NoArgs, client.Help{
		Short:   "List canonical models with their latest version",
		Example: "  seam canonical list",
	}, func(cmd *cobra.Command, _ []string, rc registryv1.RegistryServiceClient) error {
		return client.Show(cmd, g, "list canonical models", rc.ListCanonicalModels, &registryv1.ListCanonicalModelsRequest{},
			func(w io.Writer, resp *registryv1.ListCanonicalModelsResponse) error {
				t := output.NewTable(w, "MODEL", "LATEST", "FIELDS", "OWNER")
				for _, v := range resp.GetModels() {
					t.Row(v.GetName(), "v"+strconv.Itoa(int(v.GetVersion())), strconv.Itoa(len(v.GetModel().GetFields())), output.OrDash(v.GetModel().GetOwner()))
				}
				return t.Flush()
			})
	})
	cmd.AddCommand(register, get, list)
	return cmd
}

// NewConsumer returns the `seam consumer` group.
func NewConsumer(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consumer",
		Short: "Declare and list downstream consumers (lineage)",
	}
	var file string
	register := client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "register FILE", cobra.MaximumNArgs(1), client.Help{
		Short: "Create or replace a consumer: what it reads, how, and what it produces",
		Example: `  seam consumer register customer_ltv.yaml

  # customer_ltv.yaml
  name: features.customer_ltv
  owner: team-ml
  inputs:
    - {subject: shop.orders, fields: [customer_id, amount], usage: JOIN_KEY}
  produces: [features.customer_ltv]`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&file, "file", "f", "", "consumer YAML (- for standard input); or give FILE as the argument")
		},
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		c, err := client.ReadDocument(cmd, args, file, func(data []byte, path string) (*registryv1.Consumer, error) {
			c := &registryv1.Consumer{}
			return c, contract.Decode(data, path, c)
		})
		if err != nil {
			return err
		}
		return client.Send(cmd, g, "register consumer "+c.GetName(), rc.RegisterConsumer, &registryv1.RegisterConsumerRequest{Consumer: c},
			func(w io.Writer, resp *registryv1.RegisterConsumerResponse) error {
				fmt.Fprintf(w, "consumer %s registered (%d inputs, produces %s)\n", resp.GetConsumer().GetName(), len(resp.GetConsumer().GetInputs()), output.OrDash(strings.Join(resp.GetConsumer().GetProduces(), ", ")))
				return nil
			})
	})

	var subject string
	list := client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "list [SUBJECT]", cobra.MaximumNArgs(1), client.Help{
		Short:   "List consumers, optionally only those reading a subject",
		Example: "  seam consumer list shop.orders",
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&subject, "subject", "", "only consumers reading this subject directly (or give it as the argument)")
		},
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		subject, err := client.Subject(args, subject)
		if err != nil {
			return err
		}
		return client.Show(cmd, g, "list consumers", rc.ListConsumers, &registryv1.ListConsumersRequest{Subject: subject},
			func(w io.Writer, resp *registryv1.ListConsumersResponse) error {
				t := output.NewTable(w, "CONSUMER", "OWNER", "READS", "PRODUCES")
				for _, c := range resp.GetConsumers() {
					t.Row(c.GetName(), output.OrDash(c.GetOwner()), describeInputs(c.GetInputs()), output.OrDash(strings.Join(c.GetProduces(), ",")))
				}
				return t.Flush()
			})
	})
	cmd.AddCommand(register, list)
	return cmd
}

func describeInputs(in []*registryv1.Input) string {
	var parts []string
	for _, i := range in {
		src := i.GetSubject()
		switch {
		case i.GetCanonical() != "":
			src = "canonical " + i.GetCanonical()
		case src == "":
			src = "dataset " + i.GetDataset()
		}
		if len(i.GetFields()) > 0 {
			src += "(" + strings.Join(i.GetFields(), ",") + ")"
		}
		if u := i.GetUsage(); u != registryv1.UsageKind_USAGE_KIND_UNSPECIFIED {
			src += " " + strings.ToLower(output.Enum(u, "USAGE_KIND_"))
		}
		parts = append(parts, src)
	}
	return output.OrDash(strings.Join(parts, "; "))
}

// NewEvents returns the `seam events` group.
func NewEvents(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Read the registry's ordered event stream",
	}
	var f eventFilter
	list := client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "list [SUBJECT...]", cobra.ArbitraryArgs, client.Help{
		Short:   "List events after a sequence number",
		Example: "  seam events list shop.orders --type CHANGE_ANNOUNCED",
		Flags: func(fs *pflag.FlagSet) {
			f.add(fs)
			fs.Int32Var(&f.limit, "limit", 100, "most events to list")
		},
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		types, err := f.withArgs(args)
		if err != nil {
			return err
		}
		return client.Show(cmd, g, "list events", rc.ListEvents, &registryv1.ListEventsRequest{AfterSequence: f.after, Subjects: f.subjects, Types: types, Limit: f.limit},
			func(w io.Writer, resp *registryv1.ListEventsResponse) error {
				for _, e := range resp.GetEvents() {
					printEvent(w, e)
				}
				return nil
			})
	})

	var wf eventFilter
	watch := client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "watch [SUBJECT...]", cobra.ArbitraryArgs, client.Help{
		Short: "Stream events as they happen, resuming after a disconnect",
		Long: `Print events from --after on, then new ones as they are appended, until
interrupted. When the connection drops it reconnects and resumes after the
last event it printed, so nothing is missed or printed twice; when Seam
cannot be reached for --timeout it gives up (exit 2).

With -o json the output is NDJSON: one JSON object per event, one per
line, as they come (a stream has no end to close one document with).`,
		Example: `  seam events watch
  seam events watch shop.orders --after 120 -o json`,
		Flags: wf.add,
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		types, err := wf.withArgs(args)
		if err != nil {
			return err
		}
		return watchEvents(cmd.Context(), g, rc, &registryv1.WatchEventsRequest{AfterSequence: wf.after, Subjects: wf.subjects, Types: types}, cmd.OutOrStdout())
	})
	cmd.AddCommand(list, watch)
	return cmd
}

type eventFilter struct {
	after    int64
	subjects []string
	typ      []string
	limit    int32
}

func (f *eventFilter) add(fs *pflag.FlagSet) {
	fs.Int64Var(&f.after, "after", 0, "start after this sequence number")
	fs.StringSliceVar(&f.subjects, "subject", nil, "only these subjects (repeatable; or give them as arguments)")
	fs.StringSliceVar(&f.typ, "type", nil, "only these event types, e.g. CHANGE_ANNOUNCED, BACKFILL_COMPLETED (repeatable)")
}

// withArgs adds the subjects given as arguments and returns the event
// types asked for.
func (f *eventFilter) withArgs(args []string) ([]registryv1.EventType, error) {
	f.subjects = append(f.subjects, args...)
	return f.types()
}

func (f *eventFilter) types() ([]registryv1.EventType, error) {
	var out []registryv1.EventType
	for _, t := range f.typ {
		name := strings.ToUpper(strings.TrimSpace(t))
		if !strings.HasPrefix(name, "EVENT_TYPE_") {
			name = "EVENT_TYPE_" + name
		}
		v, ok := registryv1.EventType_value[name]
		if !ok || v == 0 {
			var known []string
			for i := 1; i < len(registryv1.EventType_name); i++ {
				known = append(known, strings.TrimPrefix(registryv1.EventType_name[int32(i)], "EVENT_TYPE_"))
			}
			return nil, exit.Usagef("--type %q: known types are %s", t, strings.Join(known, ", "))
		}
		out = append(out, registryv1.EventType(v))
	}
	return out, nil
}

func printEvent(w io.Writer, e *registryv1.Event) {
	line := fmt.Sprintf("#%d %s %s %s", e.GetSequence(), output.Time(e.GetTime()), output.Enum(e.GetType(), "EVENT_TYPE_"), e.GetSubject())
	if e.GetVersion() > 0 {
		line += fmt.Sprintf(" v%d", e.GetVersion())
	}
	if e.GetMessage() != "" {
		line += ": " + e.GetMessage()
	}
	if len(e.GetConsumers()) > 0 {
		line += " [consumers: " + strings.Join(e.GetConsumers(), " → ") + "]"
	}
	fmt.Fprintln(w, line)
}

// watchEvents follows the stream, resuming after the last event printed.
func watchEvents(ctx context.Context, g *client.Globals, rc registryv1.RegistryServiceClient, req *registryv1.WatchEventsRequest, w io.Writer) error {
	return client.Watch(ctx, g, "watch events", w,
		func() (grpc.ServerStreamingClient[registryv1.WatchEventsResponse], error) {
			return rc.WatchEvents(ctx, req)
		},
		func(resp *registryv1.WatchEventsResponse) *registryv1.Event {
			e := resp.GetEvent()
			req.AfterSequence = e.GetSequence()
			return e
		}, printEvent)
}
