// Package gate holds the gate's client commands under `seam gate`: ingest
// a file, contain and release a source, list containments.
package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/command/monitor"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
)

// AddCommands adds the gate's client commands to the `seam gate` group.
func AddCommands(group *cobra.Command, g *client.Globals) {
	group.AddCommand(newGateIngestCmd(g), newContainCmd(g, true), newContainCmd(g, false), newContainmentsCmd(g))
}

// defaultChunkRecords is how many records one chunk of an ingest stream
// carries: each chunk is a batch of its own at the gate.
const defaultChunkRecords = 1000

func newGateIngestCmd(g *client.Globals) *cobra.Command {
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
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			if subject == "" || partition == "" {
				return exit.Usagef("give --subject and --partition, for example --subject shop.orders --partition 2025-03-01")
			}
			if chunk <= 0 {
				return exit.Usagef("--chunk-records %d: give a positive number", chunk)
			}
			f, err := client.FileFormat(args[0], format)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return exit.Usagef("%w", err)
			}
			if batchID == "" {
				sum := sha256.Sum256(data)
				batchID = filepath.Base(args[0]) + "@" + hex.EncodeToString(sum[:8])
			}
			chunks, err := splitChunks(f, data, chunk)
			if err != nil {
				return exit.Usagef("%s: %w", args[0], err)
			}
			bar := output.Progress(cmd.ErrOrStderr(), int64(len(data)), "ingesting "+args[0])
			resp, err := streamChunks(cmd.Context(), gatev1.NewGateServiceClient(conn), &gatev1.IngestHeader{
				Subject: subject, Partition: partition, BatchId: batchID, ContractVersion: version, Format: f}, chunks, func(n int) { _ = bar.Add(n) })
			_ = bar.Finish()
			if err != nil {
				return g.RPCError("ingest "+args[0], err)
			}
			if g.JSON() {
				if err := output.Proto(cmd.OutOrStdout(), resp); err != nil {
					return err
				}
			} else {
				printIngest(cmd.OutOrStdout(), batchID, resp)
			}
			if p := resp.GetPartition(); p.GetWillBlock() || p.GetVerdict() == gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
				return exit.Failf("%s", p.GetNotice())
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
	p := r.GetPartition()
	part := output.Enum(p.GetStatus(), "PARTITION_STATUS_")
	switch {
	case p == nil:
		part = "-"
	case p.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_UNSPECIFIED:
		part += " " + output.Enum(p.GetVerdict(), "PARTITION_VERDICT_")
	case p.GetWillBlock():
		part += " (will be BLOCKED)"
	}
	t := output.NewTable(w, "BATCH", "STATUS", "VERSION", "RECEIVED", "ACCEPTED", "QUARANTINED", "CHUNKS", "PARTITION", "RETRIED")
	t.Row(batchID, output.Enum(s.GetStatus(), "BATCH_STATUS_"), fmt.Sprint(s.GetContractVersion()), fmt.Sprint(s.GetReceived()), fmt.Sprint(s.GetAccepted()),
		fmt.Sprint(s.GetQuarantined()), fmt.Sprint(r.GetChunks()), part, fmt.Sprint(s.GetRetried()))
	_ = t.Flush()
	if n := p.GetNotice(); n != "" {
		fmt.Fprintln(w, n)
	}
	for _, a := range r.GetAlerts() {
		monitor.PrintAlert(w, a)
	}
}

func newContainCmd(g *client.Globals, contain bool) *cobra.Command {
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
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error {
			if strings.TrimSpace(reason) == "" {
				return exit.Usagef("give --reason: it is kept in the audit trail and sent to the registry's event stream")
			}
			ctx, cancel := g.CallCtx(cmd.Context())
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
				return g.RPCError(use+" "+args[0], err)
			}
			if g.JSON() {
				return output.Proto(cmd.OutOrStdout(), ct)
			}
			printContainments(cmd.OutOrStdout(), []*gatev1.Containment{ct})
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (audited)")
	return cmd
}

func newContainmentsCmd(g *client.Globals) *cobra.Command {
	return &cobra.Command{
		Use:     "containments",
		Short:   "List sources that were ever contained, with their state",
		Example: "  seam gate containments -o json",
		Args:    cobra.NoArgs,
		RunE: g.Run(func(cmd *cobra.Command, _ []string, conn *grpc.ClientConn) error {
			ctx, cancel := g.CallCtx(cmd.Context())
			defer cancel()
			resp, err := gatev1.NewGateServiceClient(conn).ListContainments(ctx, &gatev1.ListContainmentsRequest{})
			if err != nil {
				return g.RPCError("list containments", err)
			}
			if g.JSON() {
				return output.Proto(cmd.OutOrStdout(), resp)
			}
			printContainments(cmd.OutOrStdout(), resp.GetContainments())
			return nil
		}),
	}
}

func printContainments(w io.Writer, cs []*gatev1.Containment) {
	t := output.NewTable(w, "SUBJECT", "CONTAINED", "AUTOMATIC", "BY", "SINCE", "REASON")
	for _, c := range cs {
		t.Row(c.GetSubject(), fmt.Sprint(c.GetContained()), fmt.Sprint(c.GetAutomatic()), c.GetPrincipal(), output.Time(c.GetTime()), c.GetReason())
	}
	_ = t.Flush()
}
