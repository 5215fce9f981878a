package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/command/monitor"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// defaultChunkRecords is how many records one chunk of an ingest stream
// carries: each chunk is a batch of its own at the gate.
const defaultChunkRecords = 1000

// chunksAhead is how many chunks are read and cut ahead of the one being
// sent, so reading, splitting and sending overlap.
const chunksAhead = 4

func newGateIngestCmd(g *client.Globals) *cobra.Command {
	var subject, partition, batchID, format string
	var version int32
	var chunk int
	var withRecords bool
	cmd := &cobra.Command{
		Use:   "ingest [SUBJECT] FILE --partition P",
		Short: "Send a file of records through the gate",
		Long: `Stream FILE (NDJSON, CSV with a header row, or one JSON array) to the
gate in chunks of --chunk-records records; every chunk is a batch of its
own, identified by the batch id and its sequence. The file is cut as
seam validate cuts it (NDJSON at line feeds, CSV where a CSV reader ends a
row) while earlier chunks are on their way. The batch id defaults to a hash
of the file, so sending the same file again is recognised and written once.

Prints the verdict counts, the partition's state and the alerts raised.
The gate answers with counts only unless --records asks for every
record's verdict and canonical record (-o json shows them); that answer
must fit in one message, so ask for it only for small files.
BLOCK thresholds are judged on the whole partition: when a BLOCK check is
over its threshold the partition is, or will be at its seal, BLOCKED, and
the command names the check, its counts and the first failing lines.
Exits 1 when the partition is or will be BLOCKED (publish nothing of it),
3 when the file holds no records.`,
		Example: `  seam gate ingest shop.orders orders-2025-03-01.ndjson --partition 2025-03-01
  seam gate ingest orders.csv --subject shop.orders --partition 2025-03-01 --batch-id nightly-0301 -o json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: g.Run(func(cmd *cobra.Command, args []string, conn grpc.ClientConnInterface) error {
			path := args[len(args)-1]
			subject, err := client.Subject(args[:len(args)-1], subject)
			if err != nil {
				return err
			}
			if subject == "" || partition == "" {
				return exit.Usagef("give the subject and --partition, for example seam gate ingest shop.orders %s --partition 2025-03-01", path)
			}
			if chunk <= 0 {
				return exit.Usagef("--chunk-records %d: give a positive number", chunk)
			}
			f, err := client.FileFormat(path, format)
			if err != nil {
				return err
			}
			file, err := os.Open(path)
			if err != nil {
				return exit.Usagef("%w", err)
			}
			defer file.Close()
			info, err := file.Stat()
			if err != nil {
				return exit.Usagef("%w", err)
			}
			if batchID == "" {
				if batchID, err = contentID(file, path); err != nil {
					return exit.Usagef("%w", err)
				}
			}
			bar := output.Progress(cmd.ErrOrStderr(), info.Size(), "ingesting "+path)
			up := &upload{
				header: &gatev1.IngestHeader{Subject: subject, Partition: partition, BatchId: batchID, ContractVersion: version, Format: f,
					SummaryOnly: !withRecords},
				split: record.NewSplitter(file, f, chunk),
				sent:  func(n int64) { _ = bar.Add64(n) },
			}
			resp, err := up.run(cmd.Context(), g, gatev1.NewGateServiceClient(conn))
			_ = bar.Finish()
			switch {
			case errors.Is(err, errNoRecords):
				return exit.Invalidf("%s holds no records; nothing was sent", path)
			case err != nil && !exit.Coded(err):
				return g.RPCError("ingest "+path, err)
			case err != nil:
				return err
			}
			if g.JSON() {
				if err := output.Proto(cmd.OutOrStdout(), resp); err != nil {
					return err
				}
			} else {
				printIngest(cmd.OutOrStdout(), batchID, resp)
			}
			if p := resp.GetPartition(); p.GetWillBlock() || p.GetVerdict() == gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
				return exit.Failf("partition %s of %s is BLOCKED: %s; publish nothing of it — fix the records and send the partition again as a replacement",
					p.GetPartition(), p.GetSubject(), blockedSummary(p))
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&subject, "subject", "", "source subject, for example shop.orders (or give it as the first argument)")
	cmd.Flags().StringVar(&partition, "partition", "", "partition of the records, for example their event date")
	cmd.Flags().StringVar(&batchID, "batch-id", "", "batch identity (default: the file name and a hash of its content)")
	cmd.Flags().StringVar(&format, "format", "", "ndjson, csv or json (default: from the file extension)")
	cmd.Flags().Int32Var(&version, "contract-version", 0, "validate with this contract version (default: the active one)")
	cmd.Flags().IntVar(&chunk, "chunk-records", defaultChunkRecords, "records per chunk (each chunk is one batch)")
	cmd.Flags().BoolVar(&withRecords, "records", false, "answer with each record's verdict and canonical record, not only the counts (small files: the answer must fit in one message)")
	return cmd
}

// contentID is the default batch id: the file's name and a hash of its
// content, read once before sending; the file is left at its start.
func contentID(f *os.File, path string) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return filepath.Base(path) + "@" + hex.EncodeToString(h.Sum(nil)[:8]), nil
}

var errNoRecords = errors.New("no records")

// upload sends one file as an ingest stream: one goroutine reads and cuts
// chunks ahead while this one sends them.
type upload struct {
	header *gatev1.IngestHeader
	split  *record.Splitter
	sent   func(bytes int64)
}

type cut struct {
	chunk record.Chunk
	err   error
}

func (u *upload) run(ctx context.Context, g *client.Globals, c gatev1.GateServiceClient) (*gatev1.IngestStreamResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cuts := make(chan cut, chunksAhead)
	go func() {
		defer close(cuts)
		for {
			ch, err := u.split.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			select {
			case cuts <- cut{ch, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	// An empty file is refused before anything is sent.
	first, ok := <-cuts
	if !ok {
		return nil, errNoRecords
	}
	if first.err != nil {
		return nil, exit.Invalidf("%w", first.err)
	}

	sctx, progress, stop := g.Stream(ctx)
	defer stop()
	stream, err := c.IngestStream(sctx)
	if err != nil {
		return nil, client.Cause(sctx, err)
	}
	// The server ends a stream it refuses with io.EOF on Send; its status
	// says why.
	ended := func(err error) error {
		if errors.Is(err, io.EOF) {
			_, err = stream.CloseAndRecv()
		}
		return client.Cause(sctx, err)
	}
	if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Header{Header: u.header}}); err != nil {
		return nil, ended(err)
	}
	seq := int64(0)
	for next := first; ; seq++ {
		if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Chunk{Chunk: &gatev1.IngestChunk{
			Sequence: seq, Data: next.chunk.Data, FirstOffset: next.chunk.FirstOffset}}}); err != nil {
			return nil, ended(err)
		}
		progress()
		u.sent(next.chunk.Bytes)
		if next, ok = <-cuts; !ok {
			break
		}
		if next.err != nil {
			// The gate keeps what it acknowledged; resending the file with
			// the same batch id writes nothing twice.
			_ = stream.CloseSend()
			return nil, exit.Invalidf("after chunk %d: %w", seq, next.err)
		}
	}
	resp, err := stream.CloseAndRecv()
	return resp, client.Cause(sctx, err)
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

// blockedSummary names the BLOCK checks over their thresholds, their
// counts and where their first failures are.
func blockedSummary(p *gatev1.PartitionState) string {
	var parts []string
	for _, c := range p.GetChecks() {
		if !c.GetExceeded() || c.GetPolicy() != contractv1.Policy_POLICY_BLOCK {
			continue
		}
		s := fmt.Sprintf("check %s failed for %d of %d records", c.GetCheck(), c.GetFailures(), c.GetRows())
		if pos := c.GetSamplePositions(); len(pos) > 0 {
			s += fmt.Sprintf(", first at line %d", pos[0])
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return p.GetNotice()
	}
	return strings.Join(parts, "; ")
}

func positions(ps []int64) string {
	var s []string
	for i, p := range ps {
		if i == 5 {
			s = append(s, "…")
			break
		}
		s = append(s, fmt.Sprint(p))
	}
	return strings.Join(s, ", ")
}

// thresholdText says how many failures a check tolerates.
func thresholdText(t *contractv1.Threshold) string {
	switch l := t.GetLimit().(type) {
	case *contractv1.Threshold_Fraction:
		return fmt.Sprintf("> %g of the batch", l.Fraction)
	case *contractv1.Threshold_Count:
		if l.Count > 0 {
			return fmt.Sprintf("> %d records", l.Count)
		}
	}
	return "any failure"
}
