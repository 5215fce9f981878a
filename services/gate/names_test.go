package gate

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// TestBadNamesRefused: every call that takes a partition, batch id,
// subject or replay id refuses a name that breaks the naming rule (path
// separators, 2,000 characters, NUL, newline, tab, zero-width space)
// with InvalidArgument naming the field, on SQLite and PostgreSQL, and
// stores nothing; a partition that does not parse as the contract's daily
// partition time (2026-3-1) is refused too, pinned version or not. None
// is an Internal error (an HTTP 500).
func TestBadNamesRefused(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, url string) {
		e, _ := paymentsEnv(t, url, nil)
		ctx := context.Background()
		good := paymentsDay{day: 0, n: 3}
		batch := &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON,
			Data: []byte(strings.Join(good.lines(), "\n"))}}}
		// Surrounding space is trimmed before a name is used (the gate
		// stores the trimmed name), so only names bad inside are listed.
		bad := []string{"../x", strings.Repeat("p", 2000), "2026-10-01\x00", "2026-10\n-01", "2026\u200b-10-01", "2026-10-01\tx", `a\b`}
		type call struct {
			name, field string
			do          func(string) error
		}
		calls := []call{
			{"ingest partition", "partition", func(v string) error {
				_, err := e.as("pipeline").Ingest(ctx, &gatev1.IngestRequest{Subject: "bank.payments", Partition: v, Identity: &gatev1.IngestRequest_BatchId{BatchId: "b1"}, Batch: batch})
				return err
			}},
			{"ingest batch id", "batch_id", func(v string) error {
				_, err := e.as("pipeline").Ingest(ctx, &gatev1.IngestRequest{Subject: "bank.payments", Partition: payDay(0), Identity: &gatev1.IngestRequest_BatchId{BatchId: v}, Batch: batch})
				return err
			}},
			{"ingest subject", "subject", func(v string) error {
				_, err := e.as("pipeline").Ingest(ctx, &gatev1.IngestRequest{Subject: v, Partition: payDay(0), Identity: &gatev1.IngestRequest_BatchId{BatchId: "b1"}, Batch: batch})
				return err
			}},
			{"seal", "partition", func(v string) error {
				_, err := e.as("pipeline").SealPartition(ctx, &gatev1.SealPartitionRequest{Subject: "bank.payments", Partition: v})
				return err
			}},
			{"get partition", "partition", func(v string) error {
				_, err := e.as("viewer").GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: "bank.payments", Partition: v})
				return err
			}},
			{"quarantine filter", "filter.partition_from", func(v string) error {
				_, err := e.as("viewer").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: &gatev1.QuarantineFilter{Subject: "bank.payments", PartitionFrom: v}})
				return err
			}},
			{"contain", "subject", func(v string) error {
				_, err := e.as("operator").Contain(ctx, &gatev1.ContainRequest{Subject: v, Reason: "test"})
				return err
			}},
			{"replay window", "window.partition_to", func(v string) error {
				s, err := e.as("operator").Replay(ctx, &gatev1.ReplayRequest{Window: &gatev1.ReplayWindow{Subject: "bank.payments", PartitionFrom: payDay(0), PartitionTo: v}})
				if err != nil {
					return err
				}
				_, err = s.Recv()
				return err
			}},
			{"replay id", "replay_id", func(v string) error {
				s, err := e.as("operator").Replay(ctx, &gatev1.ReplayRequest{Window: &gatev1.ReplayWindow{Subject: "bank.payments", PartitionFrom: payDay(0), PartitionTo: payDay(0)}, ReplayId: "r/" + v})
				if err != nil {
					return err
				}
				_, err = s.Recv()
				return err
			}},
		}
		for _, c := range calls {
			for _, v := range bad {
				if c.name == "replay id" && v != bad[0] {
					continue
				}
				err := c.do(v)
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message()+detailsOf(err), c.field) {
					t.Errorf("%s %.30q: %v, want InvalidArgument naming %s", c.name, v, err, c.field)
				}
			}
		}
		// A daily partition time: 2026-3-1 is not a day's name, pinned
		// version or not.
		for _, version := range []int32{0, 1} {
			_, err := e.as("pipeline").Ingest(ctx, &gatev1.IngestRequest{Subject: "bank.payments", Partition: "2026-3-1", Identity: &gatev1.IngestRequest_BatchId{BatchId: "b1"}, Batch: batch, ContractVersion: version})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "day partition") {
				t.Errorf("partition 2026-3-1 (version %d): %v, want InvalidArgument saying it is not a day partition", version, err)
			}
		}
		// An unknown quarantine state is an error, not an empty list.
		_, err := e.as("viewer").ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: &gatev1.QuarantineFilter{Subject: "bank.payments", State: 99}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(detailsOf(err), "filter.state") {
			t.Errorf("quarantine state 99: %v, want InvalidArgument naming filter.state", err)
		}
		// Nothing was stored: the day has no partition.
		if _, err := e.as("viewer").GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: "bank.payments", Partition: payDay(0)}); status.Code(err) != codes.NotFound {
			t.Errorf("after the refusals, partition %s: %v, want NotFound", payDay(0), err)
		}
	})
}

// detailsOf renders an error's details (field violations) as text.
func detailsOf(err error) string {
	var b strings.Builder
	for _, d := range status.Convert(err).Details() {
		b.WriteString(" ")
		b.WriteString(strings.TrimSpace(strings.ReplaceAll(stringOf(d), "\n", " ")))
	}
	return b.String()
}

func stringOf(v any) string {
	if s, ok := v.(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}
