package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// addGateCommands adds the gate's client commands: ingest, contain,
// release and containments under the `seam gate` group, and the
// quarantine, monitor and alerts commands at the top level of root.
func addGateCommands(group, root *cobra.Command, g *globals) {
	group.AddCommand(newGateIngestCmd(g), newContainCmd(g, true), newContainCmd(g, false), newContainmentsCmd(g))
	root.AddCommand(newQuarantineCmd(g), newMonitorCmd(g), newAlertsCmd(g))
}

// defaultChunkRecords is how many records one chunk of an ingest stream
// carries: each chunk is a batch of its own at the gate.
const defaultChunkRecords = 1000

func newGateIngestCmd(g *globals) *cobra.Command {
	var subject, partition, batchID, format string
	var version int32
	var chunk int
	cmd := &cobra.Command{
		Use:   "ingest FILE --subject S --partition P",
		Short: "Send a file of records through the gate",
		Long: `Stream FILE (NDJSON, CSV with a header row, or one JSON array) to the
gate in chunks of --chunk-records records; every chunk is a batch of its
own, identified by the batch id and its sequence. The batch id defaults to
a hash of the file, so sending the same file again is recognised and
written once. Prints the verdict counts and the alerts raised. Exits 1 when
the partition is, or will be, BLOCKED: a BLOCK check failed over its
threshold (the gate judges BLOCK thresholds on the whole partition).`,
		Example: `  seam gate ingest orders-2025-03-01.ndjson --subject shop.orders --partition 2025-03-01
  seam gate ingest orders.csv --subject shop.orders --partition 2025-03-01 --batch-id nightly-0301 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: withClient(g, func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			if subject == "" || partition == "" {
				return usageError("give --subject and --partition, for example --subject shop.orders --partition 2025-03-01")
			}
			if chunk <= 0 {
				return usageError("--chunk-records %d: give a positive number", chunk)
			}
			f, err := ingestFormat(format, args[0])
			if err != nil {
				return err
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return usageError("%w", err)
			}
			if batchID == "" {
				sum := sha256.Sum256(data)
				batchID = filepath.Base(args[0]) + "@" + hex.EncodeToString(sum[:8])
			}
			chunks, err := splitChunks(f, data, chunk)
			if err != nil {
				return usageError("%s: %w", args[0], err)
			}
			bar := newProgress(cmd.ErrOrStderr(), int64(len(data)), "ingesting "+args[0])
			resp, err := streamChunks(cmd.Context(), gatev1.NewGateServiceClient(conn), &gatev1.IngestHeader{
				Subject: subject, Partition: partition, BatchId: batchID, ContractVersion: version, Format: f}, chunks, func(n int) { _ = bar.Add(n) })
			_ = bar.Finish()
			if err != nil {
				return g.rpcError("ingest "+args[0], err)
			}
			if g.Output == "json" {
				if err := printJSON(cmd.OutOrStdout(), resp); err != nil {
					return err
				}
			} else {
				printIngest(cmd.OutOrStdout(), batchID, resp)
			}
			if p := resp.GetPartition(); p.GetWillBlock() || p.GetVerdict() == gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
				return answerNo("%s", p.GetNotice())
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&subject, "subject", "", "source subject, for example shop.orders")
	cmd.Flags().StringVar(&partition, "partition", "", "partition of the records, for example their event date")
	cmd.Flags().StringVar(&batchID, "batch-id", "", "batch identity (default: the file name and a hash of its content)")
	cmd.Flags().StringVar(&format, "format", "", "ndjson, csv or json (default: from the file extension)")
	cmd.Flags().Int32Var(&version, "contract-version", 0, "validate with this contract version (default: the active one)")
	cmd.Flags().IntVar(&chunk, "chunk-records", defaultChunkRecords, "records per chunk (each chunk is one batch)")
	return cmd
}

func ingestFormat(flag, path string) (recordv1.Format, error) {
	name := strings.ToLower(flag)
	if name == "" {
		name = strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
		if name == "jsonl" {
			name = "ndjson"
		}
	}
	switch name {
	case "ndjson":
		return recordv1.Format_FORMAT_NDJSON, nil
	case "csv":
		return recordv1.Format_FORMAT_CSV, nil
	case "json":
		return recordv1.Format_FORMAT_JSON, nil
	}
	if flag == "" {
		return 0, usageError("cannot tell the format of %s from its extension; pass --format ndjson, csv or json", path)
	}
	return 0, usageError("--format %q: use ndjson, csv or json", flag)
}

// ingestChunk is one chunk of an ingest stream.
type ingestChunk struct {
	data        []byte
	firstOffset int64
	size        int // bytes of the file it covers, for progress
}

// splitChunks cuts data into chunks of up to n records on record
// boundaries. CSV chunks each start with the header row (the gate decodes
// every chunk alone), and their first offset is chosen so a row's
// position is its line in the file. A JSON array is one chunk.
func splitChunks(f recordv1.Format, data []byte, n int) ([]ingestChunk, error) {
	if f == recordv1.Format_FORMAT_JSON {
		return []ingestChunk{{data: data, size: len(data)}}, nil
	}
	lines := recordLines(data)
	if len(lines) == 0 {
		return nil, errors.New("no records")
	}
	var out []ingestChunk
	if f == recordv1.Format_FORMAT_NDJSON {
		for i := 0; i < len(lines); i += n {
			j := min(i+n, len(lines))
			start, end := lines[i].start, lines[j-1].end
			out = append(out, ingestChunk{data: data[start:end], firstOffset: int64(lines[i].line - 1), size: end - start})
		}
		return out, nil
	}
	header := data[lines[0].start:lines[0].end]
	rows := lines[1:]
	if len(rows) == 0 {
		return nil, errors.New("a CSV header but no rows")
	}
	for i := 0; i < len(rows); i += n {
		j := min(i+n, len(rows))
		start, end := rows[i].start, rows[j-1].end
		buf := make([]byte, 0, len(header)+end-start)
		buf = append(buf, header...)
		buf = append(buf, data[start:end]...)
		out = append(out, ingestChunk{data: buf, firstOffset: int64(rows[i].line - 2), size: end - start + len(header)*boolInt(i == 0)})
	}
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// span is one record's bytes (with its line break) and the 1-based line
// it starts on.
type span struct{ start, end, line int }

// recordLines splits data into records at line breaks outside double
// quotes, so a quoted CSV field may hold a line break. Blank lines are
// skipped but counted.
func recordLines(data []byte) []span {
	var out []span
	line, start, startLine := 1, 0, 1
	quoted := false
	for i, c := range data {
		switch c {
		case '"':
			quoted = !quoted
		case '\n':
			if !quoted {
				if len(bytes.TrimSpace(data[start:i])) > 0 {
					out = append(out, span{start, i + 1, startLine})
				}
				start, startLine = i+1, line+1
			}
			line++
		}
	}
	if len(bytes.TrimSpace(data[start:])) > 0 {
		out = append(out, span{start, len(data), startLine})
	}
	return out
}

func streamChunks(ctx context.Context, c gatev1.GateServiceClient, h *gatev1.IngestHeader, chunks []ingestChunk, progress func(int)) (*gatev1.IngestStreamResponse, error) {
	stream, err := c.IngestStream(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Header{Header: h}}); err != nil {
		// io.EOF means the server ended the stream; its status says why.
		if _, rerr := stream.CloseAndRecv(); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	for i, ch := range chunks {
		if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Chunk{Chunk: &gatev1.IngestChunk{
			Sequence: int64(i), Data: ch.data, FirstOffset: ch.firstOffset}}}); err != nil {
			if errors.Is(err, io.EOF) {
				// The server ended the stream; its status says why.
				_, rerr := stream.CloseAndRecv()
				return nil, rerr
			}
			return nil, err
		}
		progress(ch.size)
	}
	return stream.CloseAndRecv()
}

func printIngest(w io.Writer, batchID string, r *gatev1.IngestStreamResponse) {
	s := r.GetSummary()
	t := newTable(w, "BATCH", "STATUS", "VERSION", "RECEIVED", "ACCEPTED", "QUARANTINED", "CHUNKS", "BLOCKED CHUNKS", "RETRIED")
	t.row(batchID, short(s.GetStatus(), "BATCH_STATUS_"), fmt.Sprint(s.GetContractVersion()), fmt.Sprint(s.GetReceived()), fmt.Sprint(s.GetAccepted()),
		fmt.Sprint(s.GetQuarantined()), fmt.Sprint(r.GetChunks()), fmt.Sprint(r.GetBlockedChunks()), fmt.Sprint(s.GetRetried()))
	_ = t.flush()
	for _, a := range r.GetAlerts() {
		printAlert(w, a)
	}
}

func printAlert(w io.Writer, a *gatev1.Alert) {
	fmt.Fprintf(w, "#%d %s %s %s %s/%s %s: %s\n", a.GetSequence(), fmtTime(a.GetTime()), short(a.GetSeverity(), "SEVERITY_"), a.GetKind(),
		a.GetSubject(), a.GetPartition(), a.GetCheck(), a.GetMessage())
}

func newContainCmd(g *globals, contain bool) *cobra.Command {
	var reason string
	use, short, example := "contain", "Send everything a source sends to quarantine until released",
		`  seam gate contain shop.orders --reason "INC-1: customer_id switched to UUID"`
	if !contain {
		use, short, example = "release", "End a source's containment (held records stay held until replayed)",
			`  seam gate release shop.orders --reason "v2 with the uuid mapping is active"`
	}
	cmd := &cobra.Command{
		Use:     use + " SUBJECT --reason R",
		Short:   short,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: withClient(g, func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			if strings.TrimSpace(reason) == "" {
				return usageError("give --reason: it is kept in the audit trail and sent to the registry's event stream")
			}
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			c := gatev1.NewGateServiceClient(conn)
			var ct *gatev1.Containment
			var err error
			if contain {
				var r *gatev1.ContainResponse
				r, err = c.Contain(ctx, &gatev1.ContainRequest{Subject: args[0], Reason: reason})
				ct = r.GetContainment()
			} else {
				var r *gatev1.ReleaseResponse
				r, err = c.Release(ctx, &gatev1.ReleaseRequest{Subject: args[0], Reason: reason})
				ct = r.GetContainment()
			}
			if err != nil {
				return g.rpcError(use+" "+args[0], err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), ct)
			}
			printContainments(cmd.OutOrStdout(), []*gatev1.Containment{ct})
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (audited)")
	return cmd
}

func newContainmentsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "containments",
		Short:   "List sources that were ever contained, with their state",
		Example: "  seam gate containments -o json",
		Args:    cobra.NoArgs,
		RunE: withClient(g, func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := gatev1.NewGateServiceClient(conn).ListContainments(ctx, &gatev1.ListContainmentsRequest{})
			if err != nil {
				return g.rpcError("list containments", err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			printContainments(cmd.OutOrStdout(), resp.GetContainments())
			return nil
		}),
	}
}

func printContainments(w io.Writer, cs []*gatev1.Containment) {
	t := newTable(w, "SUBJECT", "CONTAINED", "AUTOMATIC", "BY", "SINCE", "REASON")
	for _, c := range cs {
		t.row(c.GetSubject(), fmt.Sprint(c.GetContained()), fmt.Sprint(c.GetAutomatic()), c.GetPrincipal(), fmtTime(c.GetTime()), c.GetReason())
	}
	_ = t.flush()
}

// quarantineFlags are the filter flags of the quarantine commands.
type quarantineFlags struct {
	subject, from, to, reason, check, state string
	version                                 int32
}

func (f *quarantineFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.subject, "subject", "", "source subject")
	cmd.Flags().StringVar(&f.from, "from", "", "first partition (inclusive)")
	cmd.Flags().StringVar(&f.to, "to", "", "last partition (inclusive)")
	cmd.Flags().StringVar(&f.reason, "reason", "", "error code, for example ID_UNMAPPED or TYPE_MISMATCH")
	cmd.Flags().StringVar(&f.check, "check", "", "check name, for example customer_id.type")
	cmd.Flags().Int32Var(&f.version, "contract-version", 0, "contract version the records were checked with")
	cmd.Flags().StringVar(&f.state, "state", "held", "held, released or discarded")
}

func (f *quarantineFlags) filter() (*gatev1.QuarantineFilter, error) {
	st, ok := gatev1.QuarantineState_value["QUARANTINE_STATE_"+strings.ToUpper(f.state)]
	if !ok || st == 0 {
		return nil, usageError("--state %q: use held, released or discarded", f.state)
	}
	return &gatev1.QuarantineFilter{Subject: f.subject, PartitionFrom: f.from, PartitionTo: f.to, Reason: f.reason, Check: f.check,
		ContractVersion: f.version, State: gatev1.QuarantineState(st)}, nil
}

func newQuarantineCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "quarantine", Short: "Inspect, discard and replay quarantined records"}
	cmd.AddCommand(newQuarantineListCmd(g), newQuarantineShowCmd(g), newQuarantineStatsCmd(g), newQuarantineDiscardCmd(g), newQuarantineReplayCmd(g))
	return cmd
}

func reasonsText(rs []*recordv1.RecordError) (codes, checks string) {
	var c, k []string
	for _, r := range rs {
		c = append(c, short(r.GetCode(), "ERROR_CODE_"))
		k = append(k, r.GetCheck())
	}
	return strings.Join(c, ","), strings.Join(k, ",")
}

func newQuarantineListCmd(g *globals) *cobra.Command {
	var f quarantineFlags
	var limit int32
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List quarantined records in partition order",
		Example: `  seam quarantine list --subject shop.orders --from 2025-03-01 --to 2025-03-01 --reason TYPE_MISMATCH
  seam quarantine list --subject shop.orders --state released --all -o json`,
		Args: cobra.NoArgs,
		RunE: withClient(g, func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			filter, err := f.filter()
			if err != nil {
				return err
			}
			c := gatev1.NewGateServiceClient(conn)
			var t *table
			if g.Output != "json" {
				t = newTable(cmd.OutOrStdout(), "ID", "PARTITION", "BATCH", "POSITION", "VERSION", "REASONS", "CHECKS", "TIME")
			}
			tok := ""
			for {
				ctx, cancel := g.callCtx(cmd.Context())
				resp, err := c.ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: filter, PageSize: limit, PageToken: tok})
				cancel()
				if err != nil {
					return g.rpcError("list quarantine", err)
				}
				for _, q := range resp.GetRecords() {
					if g.Output == "json" {
						if err := printJSONLine(cmd.OutOrStdout(), q); err != nil {
							return err
						}
						continue
					}
					codes, checks := reasonsText(q.GetReasons())
					t.row(q.GetId(), q.GetPartition(), q.GetBatchId(), fmt.Sprint(q.GetPosition()), fmt.Sprint(q.GetContractVersion()), codes, checks, fmtTime(q.GetTime()))
				}
				tok = resp.GetNextPageToken()
				if !all || tok == "" {
					break
				}
			}
			if t != nil {
				return t.flush()
			}
			return nil
		}),
	}
	f.add(cmd)
	cmd.Flags().Int32Var(&limit, "limit", 100, "records per page")
	cmd.Flags().BoolVar(&all, "all", false, "follow every page")
	return cmd
}

func printJSONLine(w io.Writer, m proto.Message) error {
	b, err := jsonLine.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func newQuarantineShowCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "show ID",
		Short:   "Show one quarantined record with its reasons and raw bytes",
		Example: "  seam quarantine show 3f2a9c0d1e4b5a6978f0e1d2c3b4a596",
		Args:    cobra.ExactArgs(1),
		RunE: withClient(g, func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := gatev1.NewGateServiceClient(conn).GetQuarantinedRecord(ctx, &gatev1.GetQuarantinedRecordRequest{Id: args[0]})
			if err != nil {
				return g.rpcError("show "+args[0], err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp.GetRecord())
			}
			q := resp.GetRecord()
			w := cmd.OutOrStdout()
			t := newTable(w, "FIELD", "VALUE")
			t.row("id", q.GetId())
			t.row("subject", q.GetSubject())
			t.row("partition", q.GetPartition())
			t.row("batch", q.GetBatchId())
			t.row("index / position", fmt.Sprintf("%d / %d", q.GetIndex(), q.GetPosition()))
			t.row("contract version", fmt.Sprint(q.GetContractVersion()))
			t.row("format", short(q.GetFormat(), "FORMAT_"))
			t.row("quarantined", fmtTime(q.GetTime()))
			t.row("state", fmt.Sprintf("%s since %s %s %s", short(q.GetState(), "QUARANTINE_STATE_"), fmtTime(q.GetStateTime()), q.GetStateBy(), q.GetStateReason()))
			if err := t.flush(); err != nil {
				return err
			}
			fmt.Fprintln(w, "\nreasons:")
			for _, r := range q.GetReasons() {
				fmt.Fprintf(w, "  %s %s [%s]: %s\n", short(r.GetCode(), "ERROR_CODE_"), r.GetField(), r.GetCheck(), r.GetMessage())
			}
			fmt.Fprintf(w, "\nraw (%d bytes):\n%s\n", len(q.GetRaw()), q.GetRaw())
			return nil
		}),
	}
}

func newQuarantineStatsCmd(g *globals) *cobra.Command {
	var f quarantineFlags
	cmd := &cobra.Command{
		Use:     "stats",
		Short:   "Count quarantined records by reason, check and partition",
		Example: "  seam quarantine stats --subject shop.orders --from 2025-03-01 --to 2025-03-07",
		Args:    cobra.NoArgs,
		RunE: withClient(g, func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			filter, err := f.filter()
			if err != nil {
				return err
			}
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := gatev1.NewGateServiceClient(conn).GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: filter})
			if err != nil {
				return g.rpcError("quarantine stats", err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "total: %d\n\n", resp.GetTotal())
			for _, grp := range []struct {
				name   string
				counts []*gatev1.QuarantineCount
			}{{"REASON", resp.GetByReason()}, {"CHECK", resp.GetByCheck()}, {"PARTITION", resp.GetByPartition()}} {
				t := newTable(w, grp.name, "COUNT")
				for _, c := range grp.counts {
					t.row(c.GetKey(), fmt.Sprint(c.GetCount()))
				}
				if err := t.flush(); err != nil {
					return err
				}
				fmt.Fprintln(w)
			}
			return nil
		}),
	}
	f.add(cmd)
	return cmd
}

func newQuarantineDiscardCmd(g *globals) *cobra.Command {
	var f quarantineFlags
	var why string
	cmd := &cobra.Command{
		Use:   "discard [ID...] --why W",
		Short: "Discard held records for good, with a reason (audited)",
		Long: `Discard the records named by id, or every held record matching the
filter flags (at least --subject). Discarded records are never replayed;
the discard is kept in the gate's audit trail with who and why.`,
		Example: `  seam quarantine discard 3f2a9c0d1e4b5a6978f0e1d2c3b4a596 --why "test order"
  seam quarantine discard --subject shop.orders --from 2025-03-01 --to 2025-03-01 --reason MALFORMED --why "truncated upload"`,
		RunE: withClient(g, func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			if strings.TrimSpace(why) == "" {
				return usageError("give --why: it is kept in the audit trail")
			}
			filter, err := f.filter()
			if err != nil {
				return err
			}
			if len(args) == 0 && filter.GetSubject() == "" {
				return usageError("name record ids, or give at least --subject")
			}
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := gatev1.NewGateServiceClient(conn).DiscardQuarantined(ctx, &gatev1.DiscardQuarantinedRequest{Ids: args, Filter: filter, Reason: why})
			if err != nil {
				return g.rpcError("discard", err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "discarded %d records\n", resp.GetDiscarded())
			return nil
		}),
	}
	f.add(cmd)
	cmd.Flags().StringVar(&why, "why", "", "why the records are discarded (audited)")
	return cmd
}

func newQuarantineReplayCmd(g *globals) *cobra.Command {
	var from, to, replayID, out string
	var version int32
	var dryRun, summaryOnly bool
	cmd := &cobra.Command{
		Use:   "replay SUBJECT --from P --to P (--out FILE | --summary-only | --dry-run)",
		Short: "Replay held records of a partition window through today's contract",
		Long: `Re-run the held records of SUBJECT in partitions --from..--to (inclusive)
through today's contract, mapping and id tables. With --dry-run, say per
partition how many would pass and why the rest would not. Otherwise the
released canonical records are written, in partition order, one JSON
object per line with their deterministic record id, to --out (- for
standard output), and marked released with their delivery. Running the
same --replay-id again re-sends what it released and releases nothing
twice. When it ends, the registry records a backfill-completed event
naming the downstream consumers to rerun, in order.`,
		Example: `  seam quarantine replay shop.orders --from 2025-03-01 --to 2025-03-01 --dry-run
  seam quarantine replay shop.orders --from 2025-03-01 --to 2025-03-07 --replay-id inc-1 --out released.ndjson`,
		Args: cobra.ExactArgs(1),
		RunE: withClient(g, func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			if from == "" || to == "" {
				return usageError("give --from and --to: a replay is scoped to a partition window")
			}
			w := &gatev1.ReplayWindow{Subject: args[0], PartitionFrom: from, PartitionTo: to, ContractVersion: version}
			c := gatev1.NewGateServiceClient(conn)
			if dryRun {
				ctx, cancel := g.callCtx(cmd.Context())
				defer cancel()
				resp, err := c.PlanReplay(ctx, &gatev1.PlanReplayRequest{Window: w})
				if err != nil {
					return g.rpcError("plan replay", err)
				}
				if g.Output == "json" {
					return printJSON(cmd.OutOrStdout(), resp)
				}
				printPlan(cmd.OutOrStdout(), resp)
				return nil
			}
			if out == "" && !summaryOnly {
				return usageError("give --out FILE (or - for standard output) to keep the released records, or --summary-only")
			}
			var sink io.Writer = io.Discard
			report := cmd.OutOrStdout()
			if out == "-" {
				sink, report = cmd.OutOrStdout(), cmd.ErrOrStderr()
			} else if out != "" {
				f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
				if err != nil {
					return usageError("%w", err)
				}
				defer f.Close()
				sink = f
			}
			sum, err := runReplay(cmd.Context(), c, &gatev1.ReplayRequest{Window: w, ReplayId: replayID, SummaryOnly: summaryOnly}, sink)
			if err != nil {
				var ee *exitError
				if errors.As(err, &ee) {
					return err
				}
				return g.rpcError("replay", err)
			}
			if g.Output == "json" {
				return printJSON(report, sum)
			}
			t := newTable(report, "REPLAY", "PARTITIONS", "HELD", "RELEASED", "REMAINING", "EVENT", "RERUN")
			t.row(sum.GetReplayId(), fmt.Sprint(sum.GetPartitions()), fmt.Sprint(sum.GetHeld()), fmt.Sprint(sum.GetReleased()), fmt.Sprint(sum.GetRemaining()),
				fmt.Sprint(sum.GetEventSequence()), strings.Join(sum.GetRerunConsumers(), " → "))
			return t.flush()
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "first partition (inclusive)")
	cmd.Flags().StringVar(&to, "to", "", "last partition (inclusive)")
	cmd.Flags().StringVar(&replayID, "replay-id", "", "id that makes a retried replay idempotent (default: a new one)")
	cmd.Flags().StringVar(&out, "out", "", "append released canonical records to this file as NDJSON (- for standard output)")
	cmd.Flags().Int32Var(&version, "contract-version", 0, "replay through this contract version (default: the active one)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only say what would pass and why the rest would not")
	cmd.Flags().BoolVar(&summaryOnly, "summary-only", false, "release without receiving the records (they can be re-sent with the same --replay-id)")
	return cmd
}

// runReplay receives a replay: records to sink as NDJSON, then the summary.
func runReplay(ctx context.Context, c gatev1.GateServiceClient, req *gatev1.ReplayRequest, sink io.Writer) (*gatev1.ReplaySummary, error) {
	stream, err := c.Replay(ctx, req)
	if err != nil {
		return nil, err
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, answerNo("the replay ended without a summary; run it again with the same --replay-id")
		}
		if err != nil {
			return nil, err
		}
		if s := msg.GetSummary(); s != nil {
			return s, nil
		}
		if err := writeCanonical(sink, msg.GetRecord()); err != nil {
			return nil, err
		}
	}
}

// writeCanonical writes one released record as a line of JSON: its
// deterministic id (the key of a downstream upsert), its provenance, and
// the canonical record itself as a JSON object.
func writeCanonical(w io.Writer, r *recordv1.CanonicalRecord) error {
	prov, err := jsonLine.Marshal(r.GetProvenance())
	if err != nil {
		return fmt.Errorf("encode provenance: %w", err)
	}
	body := r.GetJson()
	if obj := r.GetObject(); obj != nil {
		if body, err = jsonLine.Marshal(obj); err != nil {
			return fmt.Errorf("encode record: %w", err)
		}
	}
	line := make([]byte, 0, len(body)+len(prov)+120)
	line = append(line, `{"record_id":`...)
	line = strconv.AppendQuote(line, r.GetRecordId())
	line = append(line, `,"provenance":`...)
	line = append(line, prov...)
	line = append(line, `,"record":`...)
	line = append(line, body...)
	line = append(line, "}\n"...)
	_, err = w.Write(line)
	return err
}

func printPlan(w io.Writer, p *gatev1.PlanReplayResponse) {
	t := newTable(w, "PARTITION", "HELD", "WOULD RELEASE", "WOULD REMAIN")
	for _, pp := range p.GetPartitions() {
		t.row(pp.GetPartition(), fmt.Sprint(pp.GetHeld()), fmt.Sprint(pp.GetWouldRelease()), fmt.Sprint(pp.GetWouldRemain()))
	}
	t.row("total", fmt.Sprint(p.GetHeld()), fmt.Sprint(p.GetWouldRelease()), fmt.Sprint(p.GetWouldRemain()))
	_ = t.flush()
	if len(p.GetRemainReasons()) > 0 {
		fmt.Fprintln(w, "\nwhy the rest would stay:")
		for _, r := range p.GetRemainReasons() {
			fmt.Fprintf(w, "  %s: %d\n", r.GetKey(), r.GetCount())
		}
	}
}

func newMonitorCmd(g *globals) *cobra.Command {
	var from, to string
	var fields bool
	cmd := &cobra.Command{
		Use:   "monitor SUBJECT",
		Short: "Show a source's per-partition counters and match rate",
		Example: `  seam monitor shop.orders
  seam monitor shop.orders --from 2025-03-01 --to 2025-03-07 --fields`,
		Args: cobra.ExactArgs(1),
		RunE: withClient(g, func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := gatev1.NewGateServiceClient(conn).GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: args[0], PartitionFrom: from, PartitionTo: to})
			if err != nil {
				return g.rpcError("monitor "+args[0], err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			w := cmd.OutOrStdout()
			t := newTable(w, "PARTITION", "BATCHES", "RECEIVED", "ACCEPTED", "QUARANTINED", "BLOCKED", "RELEASED", "MATCH RATE", "UPDATED")
			for _, m := range resp.GetPartitions() {
				t.row(m.GetPartition(), fmt.Sprint(m.GetBatches()), fmt.Sprint(m.GetReceived()), fmt.Sprint(m.GetAccepted()), fmt.Sprint(m.GetQuarantined()),
					fmt.Sprint(m.GetBlocked()), fmt.Sprint(m.GetReleased()), rate(m.GetMatchRate()), fmtTime(m.GetUpdateTime()))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if fields {
				ft := newTable(w, "\nPARTITION", "FIELD", "COUNT", "NULLS", "MEAN", "IDS", "MATCHED")
				for _, m := range resp.GetPartitions() {
					for _, f := range m.GetFields() {
						ft.row(m.GetPartition(), f.GetField(), fmt.Sprint(f.GetCount()), fmt.Sprint(f.GetNulls()), fmt.Sprintf("%.4g", f.GetMean()),
							fmt.Sprint(f.GetIdChecked()), fmt.Sprint(f.GetIdMatched()))
					}
				}
				return ft.flush()
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "first partition (inclusive)")
	cmd.Flags().StringVar(&to, "to", "", "last partition (inclusive)")
	cmd.Flags().BoolVar(&fields, "fields", false, "also show per-field statistics")
	return cmd
}

func rate(r float64) string {
	if r < 0 || math.IsNaN(r) {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", r*100)
}

func newAlertsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "alerts", Short: "List and watch the gate's alerts"}
	var subject string
	var after int64
	var limit int32
	list := &cobra.Command{
		Use:     "list",
		Short:   "List alerts after a sequence number",
		Example: "  seam alerts list --subject shop.orders -o json",
		Args:    cobra.NoArgs,
		RunE: withClient(g, func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.callCtx(cmd.Context())
			defer cancel()
			resp, err := gatev1.NewGateServiceClient(conn).ListAlerts(ctx, &gatev1.ListAlertsRequest{Subject: subject, AfterSequence: after, Limit: limit})
			if err != nil {
				return g.rpcError("list alerts", err)
			}
			if g.Output == "json" {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			for _, a := range resp.GetAlerts() {
				printAlert(cmd.OutOrStdout(), a)
			}
			return nil
		}),
	}
	list.Flags().StringVar(&subject, "subject", "", "only this subject")
	list.Flags().Int64Var(&after, "after", 0, "start after this sequence number")
	list.Flags().Int32Var(&limit, "limit", 100, "most alerts to list")

	var wsubject string
	var wafter int64
	watch := &cobra.Command{
		Use:   "watch",
		Short: "Stream alerts as they are raised, resuming after a disconnect",
		Long: `Print alerts from --after on, then new ones as any gate replica raises
them, until interrupted. When the connection drops it reconnects and
resumes after the last alert printed. With -o json each alert is one line.`,
		Example: `  seam alerts watch
  seam alerts watch --subject shop.orders --after 40 -o json`,
		Args: cobra.NoArgs,
		RunE: withClient(g, func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			return watchAlerts(cmd.Context(), g, gatev1.NewGateServiceClient(conn), &gatev1.WatchAlertsRequest{Subject: wsubject, AfterSequence: wafter}, cmd.OutOrStdout())
		}),
	}
	watch.Flags().StringVar(&wsubject, "subject", "", "only this subject")
	watch.Flags().Int64Var(&wafter, "after", 0, "start after this sequence number")
	cmd.AddCommand(list, watch)
	return cmd
}

// watchAlerts follows the alert stream, resuming after the last alert
// printed.
func watchAlerts(ctx context.Context, g *globals, c gatev1.GateServiceClient, req *gatev1.WatchAlertsRequest, w io.Writer) error {
	return follow(ctx, g, "watch alerts",
		func() (grpc.ServerStreamingClient[gatev1.WatchAlertsResponse], error) { return c.WatchAlerts(ctx, req) },
		func(resp *gatev1.WatchAlertsResponse) error {
			a := resp.GetAlert()
			req.AfterSequence = a.GetSequence()
			if g.Output == "json" {
				return printJSONLine(w, a)
			}
			printAlert(w, a)
			return nil
		})
}
