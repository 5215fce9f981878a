// Package events holds `seam events`: list and watch the registry's
// ordered event stream.
package events

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// New returns the `seam events` group.
func New(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Read the registry's ordered event stream",
	}
	var f eventFilter
	list := &cobra.Command{
		Use:     "list [SUBJECT...]",
		Short:   "List events after a sequence number",
		Example: "  seam events list shop.orders --type CHANGE_ANNOUNCED",
		Args:    cobra.ArbitraryArgs,
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
			types, err := f.withArgs(args)
			if err != nil {
				return err
			}
			return client.Show(cmd, g, "list events", registryv1.NewRegistryServiceClient(conn).ListEvents, &registryv1.ListEventsRequest{AfterSequence: f.after, Subjects: f.subjects, Types: types, Limit: f.limit},
				func(w io.Writer, resp *registryv1.ListEventsResponse) error {
					for _, e := range resp.GetEvents() {
						printEvent(w, e)
					}
					return nil
				})
		}),
	}
	f.add(list)
	list.Flags().Int32Var(&f.limit, "limit", 100, "most events to list")

	var wf eventFilter
	watch := &cobra.Command{
		Use:   "watch [SUBJECT...]",
		Short: "Stream events as they happen, resuming after a disconnect",
		Long: `Print events from --after on, then new ones as they are appended, until
interrupted. When the connection drops it reconnects and resumes after the
last event it printed, so nothing is missed or printed twice; when Seam
cannot be reached for --timeout it gives up (exit 2).

With -o json the output is NDJSON: one JSON object per event, one per
line, as they come (a stream has no end to close one document with).`,
		Example: `  seam events watch
  seam events watch shop.orders --after 120 -o json`,
		Args: cobra.ArbitraryArgs,
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
			types, err := wf.withArgs(args)
			if err != nil {
				return err
			}
			return watchEvents(cmd.Context(), g, registryv1.NewRegistryServiceClient(conn), &registryv1.WatchEventsRequest{AfterSequence: wf.after, Subjects: wf.subjects, Types: types}, cmd.OutOrStdout())
		}),
	}
	wf.add(watch)
	cmd.AddCommand(list, watch)
	return cmd
}

type eventFilter struct {
	after    int64
	subjects []string
	typ      []string
	limit    int32
}

func (f *eventFilter) add(cmd *cobra.Command) {
	cmd.Flags().Int64Var(&f.after, "after", 0, "start after this sequence number")
	cmd.Flags().StringSliceVar(&f.subjects, "subject", nil, "only these subjects (repeatable; or give them as arguments)")
	cmd.Flags().StringSliceVar(&f.typ, "type", nil, "only these event types, e.g. CHANGE_ANNOUNCED, BACKFILL_COMPLETED (repeatable)")
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
	return client.Follow(ctx, g, "watch events",
		func() (grpc.ServerStreamingClient[registryv1.WatchEventsResponse], error) {
			return rc.WatchEvents(ctx, req)
		},
		func(resp *registryv1.WatchEventsResponse) error {
			e := resp.GetEvent()
			req.AfterSequence = e.GetSequence()
			if g.JSON() {
				b, err := output.MarshalProto(output.Line, e)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(w, string(b))
				return err
			}
			printEvent(w, e)
			return nil
		})
}
