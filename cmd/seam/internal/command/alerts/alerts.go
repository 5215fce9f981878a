// Package alerts holds `seam alerts`: list, watch, acknowledge and resolve
// the gate's alerts.
package alerts

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
)

// New returns the `seam alerts` group.
func New(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "alerts", Short: "List, watch, acknowledge and resolve the gate's alerts",
		Long: `An alert is OPEN when the gate raises it, ACKNOWLEDGED when someone takes
it, and RESOLVED when someone resolves it or when it no longer holds: a
replay re-judged its partition and the check passed ("replay <id>"), or a
later partition passed the same statistical check ("partition <p>").`}
	cmd.AddCommand(newListCmd(g), newWatchCmd(g), newMoveCmd(g, "ack", gatev1.AlertState_ALERT_STATE_ACKNOWLEDGED), newMoveCmd(g, "resolve", gatev1.AlertState_ALERT_STATE_RESOLVED))
	return cmd
}

// holding are the states of an alert that still holds.
var holding = []gatev1.AlertState{gatev1.AlertState_ALERT_STATE_OPEN, gatev1.AlertState_ALERT_STATE_ACKNOWLEDGED}

// parseStates reads --state values (open, acknowledged, resolved).
func parseStates(names []string) ([]gatev1.AlertState, error) {
	var out []gatev1.AlertState
	for _, n := range names {
		for _, part := range strings.Split(n, ",") {
			st, ok := gatev1.AlertState_value["ALERT_STATE_"+strings.ToUpper(strings.TrimSpace(part))]
			if !ok || st == 0 {
				return nil, exit.Usagef("--state %q: use open, acknowledged or resolved", part)
			}
			out = append(out, gatev1.AlertState(st))
		}
	}
	return out, nil
}

func newListCmd(g *client.Globals) *cobra.Command {
	var subject, kind string
	var states []string
	var after int64
	var limit int32
	var all bool
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "list [SUBJECT]", cobra.MaximumNArgs(1), client.Help{
		Short: "List the alerts that still hold (open or acknowledged)",
		Long: `List the alerts that still hold, OPEN or ACKNOWLEDGED, oldest first. --all
lists every alert, resolved ones with who or what resolved them; --state
picks states.`,
		Example: `  seam alerts list shop.orders
  seam alerts list shop.orders --all -o json
  seam alerts list --state resolved --kind UNANNOUNCED_CHANGE`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&subject, "subject", "", "only this subject (or give it as the argument)")
			fs.StringVar(&kind, "kind", "", "only this kind, for example UNANNOUNCED_CHANGE or MATCH_RATE")
			fs.StringSliceVar(&states, "state", nil, "only these states: open, acknowledged, resolved (default: open and acknowledged)")
			fs.BoolVar(&all, "all", false, "every alert, resolved ones too")
			fs.Int64Var(&after, "after", 0, "start after this sequence number")
			fs.Int32Var(&limit, "limit", 100, "most alerts to list")
		},
	}, func(cmd *cobra.Command, args []string, gc gatev1.GateServiceClient) error {
		subject, err := client.Subject(args, subject)
		if err != nil {
			return err
		}
		want, err := parseStates(states)
		if err != nil {
			return err
		}
		switch {
		case all && len(want) > 0:
			return exit.Usagef("--all lists every state; leave out --state, or --all")
		case !all && len(want) == 0:
			want = holding
		}
		req := &gatev1.ListAlertsRequest{Subject: subject, AfterSequence: after, Limit: limit, States: want, Kind: kind}
		return client.Show(cmd, g, "list alerts", gc.ListAlerts, req,
			func(w io.Writer, resp *gatev1.ListAlertsResponse) error {
				for _, a := range resp.GetAlerts() {
					Print(w, a)
				}
				return nil
			})
	})
}

func newMoveCmd(g *client.Globals, verb string, state gatev1.AlertState) *cobra.Command {
	var reason string
	short, long, example := "Acknowledge an open alert: someone is on it", `Acknowledge an open alert. It still holds and is still listed; the
acknowledgement records who took it. Acknowledging it again changes nothing.`, "  seam alerts ack 42 --reason \"asked the source team\""
	if state == gatev1.AlertState_ALERT_STATE_RESOLVED {
		short, long, example = "Resolve an alert, with a reason", `Resolve an alert by hand, with a reason. The gate resolves alerts itself
when they no longer hold; resolve one by hand when it needs no more
attention for another reason.`, "  seam alerts resolve 42 --reason \"drivers log in by e-mail now; v3 declares it\""
	}
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, verb+" SEQUENCE", cobra.ExactArgs(1), client.Help{
		Short:   short,
		Long:    long,
		Example: example,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&reason, "reason", "", "why (required to resolve)")
		},
	}, func(cmd *cobra.Command, args []string, c gatev1.GateServiceClient) error {
		seq, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || seq <= 0 {
			return exit.Usagef("alert %q: give the alert's sequence number (the #N of seam alerts list)", args[0])
		}
		if state == gatev1.AlertState_ALERT_STATE_RESOLVED && strings.TrimSpace(reason) == "" {
			return exit.Usagef("resolve %d: say why with --reason", seq)
		}
		ctx, cancel := g.CallCtx(cmd.Context())
		defer cancel()
		var a *gatev1.Alert
		if state == gatev1.AlertState_ALERT_STATE_RESOLVED {
			resp, err := c.ResolveAlert(ctx, &gatev1.ResolveAlertRequest{Sequence: seq, Reason: reason})
			if err != nil {
				return g.RPCError(fmt.Sprintf("resolve alert %d", seq), err)
			}
			a = resp.GetAlert()
		} else {
			resp, err := c.AcknowledgeAlert(ctx, &gatev1.AcknowledgeAlertRequest{Sequence: seq, Reason: reason})
			if err != nil {
				return g.RPCError(fmt.Sprintf("acknowledge alert %d", seq), err)
			}
			a = resp.GetAlert()
		}
		if g.JSON() {
			return output.Proto(cmd.OutOrStdout(), a)
		}
		Print(cmd.OutOrStdout(), a)
		return nil
	})
}

func newWatchCmd(g *client.Globals) *cobra.Command {
	var subject string
	var after int64
	return client.ServiceCommand(g, gatev1.NewGateServiceClient, "watch [SUBJECT]", cobra.MaximumNArgs(1), client.Help{
		Short: "Stream alerts as they are raised, resuming after a disconnect",
		Long: `Print alerts from --after on, then new ones as any gate replica raises
them, until interrupted. When the connection drops it reconnects and
resumes after the last alert printed; when Seam cannot be reached for
--timeout it gives up (exit 2).

With -o json the output is NDJSON: one JSON object per alert, one per
line, as they come (a stream has no end to close one document with).`,
		Example: `  seam alerts watch
  seam alerts watch shop.orders --after 40 -o json`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&subject, "subject", "", "only this subject (or give it as the argument)")
			fs.Int64Var(&after, "after", 0, "start after this sequence number")
		},
	}, func(cmd *cobra.Command, args []string, gc gatev1.GateServiceClient) error {
		subject, err := client.Subject(args, subject)
		if err != nil {
			return err
		}
		return watch(cmd.Context(), g, gc, &gatev1.WatchAlertsRequest{Subject: subject, AfterSequence: after}, cmd.OutOrStdout())
	})
}

// watch follows the alert stream, resuming after the last alert printed.
func watch(ctx context.Context, g *client.Globals, c gatev1.GateServiceClient, req *gatev1.WatchAlertsRequest, w io.Writer) error {
	return client.Watch(ctx, g, "watch alerts", w,
		func() (grpc.ServerStreamingClient[gatev1.WatchAlertsResponse], error) { return c.WatchAlerts(ctx, req) },
		func(resp *gatev1.WatchAlertsResponse) *gatev1.Alert {
			a := resp.GetAlert()
			req.AfterSequence = a.GetSequence()
			return a
		}, Print)
}

// Print writes one alert as one line: its sequence, time, severity, kind,
// where, its state when not open (with who acknowledged or resolved it)
// and its message.
func Print(w io.Writer, a *gatev1.Alert) {
	state := ""
	switch a.GetState() {
	case gatev1.AlertState_ALERT_STATE_ACKNOWLEDGED:
		state = " [ACKNOWLEDGED by " + a.GetAcknowledgedBy() + "]"
	case gatev1.AlertState_ALERT_STATE_RESOLVED:
		state = " [RESOLVED by " + a.GetResolvedBy() + "]"
	}
	fmt.Fprintf(w, "#%d %s %s %s %s/%s %s%s: %s\n", a.GetSequence(), output.Time(a.GetTime()), output.Enum(a.GetSeverity(), "SEVERITY_"), a.GetKind(),
		a.GetSubject(), a.GetPartition(), a.GetCheck(), state, a.GetMessage())
}
