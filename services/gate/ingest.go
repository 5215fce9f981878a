package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/idpack"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/verdict"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// batchInput is one batch to ingest, from a unary call or a stream chunk.
type batchInput struct {
	subject, partition, batchID string
	version                     int32
	batch                       *recordv1.RecordBatch
	// withRecords is set when the answer carries canonical records; it
	// must then fit in one message, and they are kept for retries.
	withRecords bool
	// packed is set when the verdicts are answered packed
	// (INGEST_ANSWER_PACKED): with canonical records when withRecords is
	// set, in the summary form (positions) when not.
	packed bool
	// replace makes the batch start a new sending of its partition, once
	// per replaceKey (the batch id, or a stream's id for all its chunks).
	replace    bool
	replaceKey string
	// seal seals the partition after the batch.
	seal bool
	// sequence is the stream chunk's sequence (0 for a unary batch).
	sequence int64
}

// idState says whether a quarantined record's identifier was counted in
// its partition's match rate, so a replay that releases it counts it
// exactly once.
const (
	idUncounted = 0 // not looked up (contained batch, or no identifier value)
	idUnmatched = 1
	idMatched   = 2
)

// quarantined is one record set aside by a batch.
type quarantined struct {
	id       string
	index    int64
	position int64
	raw      []byte
	reasons  []*recordv1.RecordError
	idState  int
}

// keyed is an accepted record's contract key, for the partition's key
// index.
type keyed struct {
	index   int64
	hash    []byte
	idState int
}

// outcome is everything a batch writes, decided before the write
// transaction so the transaction does no network I/O. Only the key index
// (duplicates) is decided inside it.
type outcome struct {
	in     batchInput
	cv     *compiled
	format recordv1.Format
	header []byte
	raws   [][]byte // each record's raw bytes, by index, for duplicates
	resp   *gatev1.IngestResponse
	quar   []quarantined
	// figures are the batch's additions to its partition's figures.
	figures unitFigures
	// idChecked and idMatched count the identifiers of the partition's
	// match rate field in this batch.
	idChecked, idMatched int64
	// keys are the accepted records' keys; maxTime is the latest event
	// time among the accepted records (with a partition time).
	keys    []keyed
	maxTime time.Time
	// contained is set when the batch was held whole because its subject
	// was contained.
	contained bool
	// packed and packErr are resp's verdicts packed (verdict.Pack), once
	// for the size check, the kept answer and the answer (packedVerdicts).
	// With direct, they were packed with the canonical records straight
	// from the adapter's answers (packDirect): resp's accepted verdicts
	// carry no canonical record, packed has them.
	packed  *gatev1.PackedVerdicts
	packErr error
	direct  bool
}

// packedVerdicts is o's verdicts packed: the canonical records of a batch
// with records are packed once, whatever needs them packed.
func (o *outcome) packedVerdicts() (*gatev1.PackedVerdicts, error) {
	if o.packed == nil && o.packErr == nil {
		o.packed, o.packErr = verdict.Pack(o.resp.GetRecords())
	}
	return o.packed, o.packErr
}

// errDuplicateBatch aborts a write transaction that lost the race for a
// batch's idempotency key to another request or replica.
var errDuplicateBatch = errors.New("batch already ingested")

// errTargetMoved aborts a write transaction whose partition changed since
// the batch was validated for it (sealed, replaced, or judged by another
// version): the batch is validated again.
var errTargetMoved = errors.New("the partition changed while the batch was validated")

// Ingest validates, adapts and routes one batch.
func (s *Server) Ingest(ctx context.Context, req *gatev1.IngestRequest) (*gatev1.IngestResponse, error) {
	in := batchInput{subject: strings.TrimSpace(req.GetSubject()), partition: strings.TrimSpace(req.GetPartition()),
		version: req.GetContractVersion(), batch: req.GetBatch(), withRecords: !req.GetSummaryOnly(), replace: req.GetReplace(), seal: req.GetSeal()}
	var err error
	if in.packed, err = packedAnswer(req.GetAnswer(), false, "answer"); err != nil {
		return nil, err
	}
	switch id := req.GetIdentity().(type) {
	case *gatev1.IngestRequest_BatchId:
		in.batchID = strings.TrimSpace(id.BatchId)
	case *gatev1.IngestRequest_Offsets:
		if id.Offsets.GetEnd() < id.Offsets.GetStart() {
			return nil, rpcerr.InvalidArgument("bad batch identity", rpcerr.FieldViolation{Field: "offsets",
				Description: fmt.Sprintf("end %d is before start %d; send the source offsets the batch covers", id.Offsets.GetEnd(), id.Offsets.GetStart())})
		}
		in.batchID = fmt.Sprintf("offsets:%d-%d", id.Offsets.GetStart(), id.Offsets.GetEnd())
	}
	in.replaceKey = in.batchID
	if err := validateInput(in, "batch_id or offsets"); err != nil {
		return nil, err
	}
	return s.ingest(ctx, in)
}

// packedAnswer says whether an answer form asks for packed verdicts, and
// refuses a form it cannot give. A summary-only stream answer already
// carries only the first verdicts of records not accepted: it has nothing
// to pack (summaryStream).
func packedAnswer(a gatev1.IngestAnswer, summaryStream bool, field string) (bool, error) {
	switch a {
	case gatev1.IngestAnswer_INGEST_ANSWER_UNSPECIFIED, gatev1.IngestAnswer_INGEST_ANSWER_RECORDS:
		return false, nil
	case gatev1.IngestAnswer_INGEST_ANSWER_PACKED:
		if summaryStream {
			return false, rpcerr.InvalidArgument("a summary-only stream answer carries only verdicts of records not accepted; there is nothing to pack", rpcerr.FieldViolation{Field: field,
				Description: "ask for INGEST_ANSWER_PACKED without summary_only, or for summary_only without an answer form"})
		}
		return true, nil
	}
	return false, rpcerr.InvalidArgument(fmt.Sprintf("answer form %d is not one this gate knows", a), rpcerr.FieldViolation{Field: field,
		Description: "ask for INGEST_ANSWER_RECORDS or INGEST_ANSWER_PACKED, or leave it unset"})
}

func validateInput(in batchInput, idField string) error {
	var bad []rpcerr.FieldViolation
	if in.subject == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "subject", Description: "name the source subject, for example shop.orders"})
	}
	if in.partition == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: "partition", Description: "name the batch's partition, for example its event date 2025-03-01"})
	}
	if in.batchID == "" {
		bad = append(bad, rpcerr.FieldViolation{Field: idField, Description: "give the batch an identity so a retry is recognised and written once"})
	}
	bad = badNames(bad, "subject", in.subject, "partition", in.partition, strings.Fields(idField)[0], in.batchID)
	if in.version < 0 {
		bad = append(bad, rpcerr.FieldViolation{Field: "contract_version", Description: "a version is positive; send 0 for the active version"})
	}
	switch b := in.batch.GetBody().(type) {
	case *recordv1.RecordBatch_Raw:
		f := b.Raw.GetFormat()
		if f != recordv1.Format_FORMAT_JSON && f != recordv1.Format_FORMAT_NDJSON && f != recordv1.Format_FORMAT_CSV {
			bad = append(bad, rpcerr.FieldViolation{Field: "batch.raw.format", Description: "declare FORMAT_JSON, FORMAT_NDJSON or FORMAT_CSV"})
		}
	case *recordv1.RecordBatch_Objects:
	default:
		bad = append(bad, rpcerr.FieldViolation{Field: "batch", Description: "send records as raw bytes with a format, or as objects"})
	}
	if len(bad) > 0 {
		return rpcerr.InvalidArgument("the batch cannot be ingested as sent", bad...)
	}
	return nil
}

// digestOf binds a batch id to what it carries: its records (bytes and
// format, or objects), where they start, the version it pins and whether
// it replaces its partition. A retry carries the same; another batch
// under the same id does not.
//
// It is a 64-bit xxHash: the digest tells a retry from another batch sent
// under the same id by the same caller, who may choose any id, so it
// guards against accident, not against an adversary, and every byte a
// gate takes passes through it (SHA-256 cost 0.17 µs a record of
// shop.orders, xxHash 0.03 µs).
func digestOf(in batchInput) ([]byte, error) { return digestWith(xxhash.New(), in) }

// sameContent reports whether a retry carries what its stored batch did:
// a batch stored with a SHA-256 digest (32 bytes, before the digest was an
// xxHash) is compared by that hash.
func sameContent(stored, digest []byte, in batchInput) bool {
	if len(stored) == sha256.Size {
		old, err := digestWith(sha256.New(), in)
		return err == nil && bytes.Equal(stored, old)
	}
	return bytes.Equal(stored, digest)
}

func digestWith(h hash.Hash, in batchInput) ([]byte, error) {
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	switch b := in.batch.GetBody().(type) {
	case *recordv1.RecordBatch_Raw:
		field([]byte(b.Raw.GetFormat().String()))
		field(b.Raw.GetData())
	case *recordv1.RecordBatch_Objects:
		enc, err := proto.MarshalOptions{Deterministic: true}.Marshal(b.Objects)
		if err != nil {
			return nil, rpcerr.InvalidArgument("the batch's objects cannot be encoded: "+err.Error(), rpcerr.FieldViolation{Field: "batch.objects", Description: err.Error()})
		}
		field([]byte("objects"))
		field(enc)
	}
	field(fmt.Appendf(nil, "%d/%d/%t", in.batch.GetFirstOffset(), in.version, in.replace))
	return h.Sum(nil), nil
}

// ingest runs one batch through the gate: prepare, then finish.
func (s *Server) ingest(ctx context.Context, in batchInput) (*gatev1.IngestResponse, error) {
	return s.finish(s.prepare(ctx, in))
}

// prepared is a batch taken as far as it goes without writing: its
// idempotency row read, and unless it is a retry, decoded, validated,
// adapted and its identifiers looked up. A stream prepares its next chunk
// while the previous one commits; chunks still commit one after another,
// in order.
type prepared struct {
	ctx    context.Context
	span   trace.Span
	began  time.Time
	in     batchInput
	digest []byte
	stored *storedBatch // the batch is a retry of this stored one
	cv     *compiled
	dec    *record.Decoder
	o      *outcome
	err    error
	// ahead is set for a stream chunk prepared while the chunk before it
	// was committing: what that commit changed is checked again.
	ahead bool
}

// prepare reads the batch's idempotency row first, so a retry costs one
// query; the write transaction inserts the row again under its unique
// key, so concurrent duplicates (other requests, other replicas) are
// decided by the database.
func (s *Server) prepare(ctx context.Context, in batchInput) *prepared {
	p := &prepared{in: in, began: s.cfg.Clock()}
	p.ctx, p.span = s.startIngest(ctx, in)
	// The digest, a hash of the whole batch, is needed only to compare a
	// retry with its stored batch and to write the batch: it is computed
	// beside reading the row and validating.
	var digestErr error
	digested := make(chan struct{})
	go func() {
		defer close(digested)
		p.digest, digestErr = digestOf(in)
	}()
	stored, ok, err := s.store.Batch(p.ctx, batchKey{in.subject, in.partition, in.batchID})
	switch {
	case err != nil:
		p.err = err
	case ok:
		p.stored = &stored
	default:
		p.err = s.validateBatch(p)
	}
	<-digested
	if digestErr != nil {
		p.err = digestErr
	}
	return p
}

// release gives the batch's decoder back; its records are not used after.
func (p *prepared) release() {
	if p.dec != nil {
		p.cv.decoders.Put(p.dec)
		p.dec = nil
	}
}

// drop ends a prepared batch that is not committed because an earlier
// chunk of its stream failed.
func (p *prepared) drop() {
	p.release()
	p.span.End()
}

// finish settles a prepared batch and answers in the form it asked for.
func (s *Server) finish(p *prepared) (resp *gatev1.IngestResponse, err error) {
	ctx, in := p.ctx, p.in
	defer func() { s.endIngest(ctx, p.span, in, p.began, resp, err) }()
	defer p.release()
	if resp, err = s.settle(p); err != nil {
		return nil, err
	}
	return inForm(in, resp)
}

// inForm is an answer in the form its batch asked for: the verdicts
// packed for INGEST_ANSWER_PACKED. A first answer and a retry's are
// packed from the same verdicts, so they say the same.
func inForm(in batchInput, resp *gatev1.IngestResponse) (*gatev1.IngestResponse, error) {
	if !in.packed || resp.GetPacked() != nil {
		return resp, nil
	}
	packed, err := verdict.Pack(resp.GetRecords())
	return packedForm(in, resp, packed, err)
}

// packedForm is resp answered with packed, the packing of its verdicts
// (which failed with err).
func packedForm(in batchInput, resp *gatev1.IngestResponse, packed *gatev1.PackedVerdicts, err error) (*gatev1.IngestResponse, error) {
	if err != nil {
		return nil, rpcerr.FailedPrecondition("ANSWER_NOT_PACKABLE",
			fmt.Sprintf("the verdicts of batch %s of %s partition %s cannot be packed: %v; ask for INGEST_ANSWER_RECORDS (nothing is written twice)",
				in.batchID, in.subject, in.partition, err),
			map[string]string{"subject": in.subject, "partition": in.partition, "batch_id": in.batchID})
	}
	return &gatev1.IngestResponse{Summary: resp.GetSummary(), Alerts: resp.GetAlerts(), Partition: resp.GetPartition(), Packed: packed}, nil
}

// settle commits a prepared batch, or answers a retry from the stored row.
// A partition that moved since the batch was validated (sealed, replaced,
// judged by another version), or a subject contained since, gets the
// batch validated again.
func (s *Server) settle(p *prepared) (*gatev1.IngestResponse, error) {
	ctx, in := p.ctx, p.in
	if p.err != nil {
		return nil, p.err
	}
	if p.stored != nil {
		return s.storedAnswer(ctx, in, p.digest, *p.stored)
	}
	key := batchKey{in.subject, in.partition, in.batchID}
	for attempt := 0; ; attempt++ {
		again := attempt > 0
		if !again && p.ahead && !p.o.contained {
			var err error
			if again, err = s.containedSince(ctx, p); err != nil {
				return nil, err
			}
		}
		if again {
			p.release()
			if err := s.validateBatch(p); err != nil {
				return nil, err
			}
		}
		resp, err := s.commitBatch(ctx, p.o, p.digest)
		switch {
		case errors.Is(err, errTargetMoved) && attempt < 3:
			continue
		case errors.Is(err, errTargetMoved):
			return nil, rpcerr.WithReason(codes.Aborted, "PARTITION_BUSY", fmt.Sprintf("partition %s of %s kept changing (sealed, replaced) while batch %s was validated; send it again",
				in.partition, in.subject, in.batchID), map[string]string{"subject": in.subject, "partition": in.partition})
		case errors.Is(err, errDuplicateBatch):
			stored, ok, err := s.store.Batch(ctx, key)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("batch %s of %s/%s: lost the idempotency race but found no stored row", in.batchID, in.subject, in.partition)
			}
			return s.storedAnswer(ctx, in, p.digest, stored)
		case err != nil:
			return nil, err
		}
		s.metrics.batch(ctx, in.subject, resp.GetSummary())
		s.sealDue(ctx, p.cv, in.subject, in.partition)
		return resp, nil
	}
}

// containedSince says whether the batch's subject was contained after
// the batch was validated (by an earlier chunk of its stream, say): it
// is then validated again, and quarantined whole.
func (s *Server) containedSince(ctx context.Context, p *prepared) (bool, error) {
	cont, ok, err := s.store.Containment(ctx, p.in.subject)
	return ok && cont.Contained, err
}

// validateBatch decodes, validates and adapts the batch for the version
// that judges it; what it decided is p.o.
func (s *Server) validateBatch(p *prepared) error {
	ctx, in := p.ctx, p.in
	cv, err := s.targetVersion(ctx, in)
	if err != nil {
		return err
	}
	cont, contained, err := s.store.Containment(ctx, in.subject)
	if err != nil {
		return err
	}
	p.cv, p.dec = cv, cv.decoders.Get()
	decoded, format, err := decode(p.dec, in.batch)
	if err != nil {
		return err
	}
	if contained && cont.Contained {
		p.o = containedOutcome(in, cv, format, decoded, cont)
	} else if p.o, err = s.validate(ctx, in, cv, format, decoded); err != nil {
		return err
	}
	if !in.withRecords {
		return nil
	}
	resp := p.o.resp
	if in.packed {
		packed, err := p.o.packedVerdicts()
		if resp, err = packedForm(in, resp, packed, err); err != nil {
			return err
		}
	}
	return s.fits(resp, in)
}

// targetVersion is the contract version a batch is validated with: that
// of the open partition (or amendment) it goes into, so one partition is
// judged by one version; for a batch that opens one, the pinned version,
// else the version in force for the partition's data date when the
// contract declares a partition time, else the active version. Without a
// partition time, a batch pinning a later version than the open
// partition's seals it (SEAL_CAUSE_VERSION) and opens an amendment.
func (s *Server) targetVersion(ctx context.Context, in batchInput) (*compiled, error) {
	if !in.replace {
		_, u, ok, err := s.store.Head(ctx, in.subject, in.partition, nil)
		if err != nil {
			return nil, err
		}
		if ok && u.status == gatev1.PartitionStatus_PARTITION_STATUS_OPEN && u.version > 0 {
			if in.version > u.version {
				cv, err := s.contracts.resolve(ctx, in.subject, in.version, false)
				if err != nil {
					return nil, err
				}
				if cv.spec == nil {
					// Versions by wall clock: the later version closes the
					// open part and judges what follows, as an amendment.
					if _, err := s.seal(ctx, in.subject, in.partition, gatev1.SealCause_SEAL_CAUSE_VERSION, auth.NameFromContext(ctx)); err != nil {
						return nil, err
					}
					return cv, nil
				}
			}
			if in.version > 0 && in.version != u.version {
				return nil, rpcerr.FailedPrecondition("PARTITION_VERSION_MISMATCH",
					fmt.Sprintf("partition %s of %s is judged by version %d (its first batch's); send its batches with version %d or 0, or resend the partition with replace to judge it by version %d",
						in.partition, in.subject, u.version, u.version, in.version),
					map[string]string{"subject": in.subject, "partition": in.partition, "version": fmt.Sprint(u.version)})
			}
			return s.contracts.resolve(ctx, in.subject, u.version, false)
		}
	}
	return s.versionFor(ctx, in.subject, in.partition, in.version)
}

// versionFor picks the version that judges a new partition (or amendment).
func (s *Server) versionFor(ctx context.Context, subject, part string, pinned int32) (*compiled, error) {
	if pinned > 0 {
		cv, err := s.contracts.resolve(ctx, subject, pinned, false)
		if err != nil || cv.spec == nil {
			return cv, err
		}
		if _, _, err := cv.spec.Bounds(part); err != nil {
			return nil, rpcerr.InvalidArgument(err.Error(), rpcerr.FieldViolation{Field: "partition", Description: err.Error()})
		}
		return cv, nil
	}
	active, err := s.contracts.resolve(ctx, subject, 0, false)
	if err != nil || active.spec == nil {
		return active, err
	}
	_, end, err := active.spec.Bounds(part)
	if err != nil {
		return nil, rpcerr.InvalidArgument(err.Error(), rpcerr.FieldViolation{Field: "partition", Description: err.Error()})
	}
	return s.contracts.forData(ctx, subject, end)
}

// fits refuses, before anything is written, an answer with canonical
// records that could not be sent in one message: a pipeline retrying
// Unavailable forever is worse than being told to ask for less.
func (s *Server) fits(resp *gatev1.IngestResponse, in batchInput) error {
	limit := s.cfg.MaxMessageBytes - s.cfg.MaxMessageBytes/16 // room for alerts and the partition's state
	if n := proto.Size(resp); n > limit {
		return rpcerr.WithReason(codes.ResourceExhausted, "ANSWER_TOO_LARGE",
			fmt.Sprintf("the answer to batch %s with its canonical records would be %d bytes, over the gate's message limit of %d bytes; nothing was written — send the batch with summary_only, or in smaller batches",
				in.batchID, n, s.cfg.MaxMessageBytes),
			map[string]string{"limit_bytes": fmt.Sprint(s.cfg.MaxMessageBytes), "answer_bytes": fmt.Sprint(n), "batch_id": in.batchID})
	}
	return nil
}

// storedAnswer repeats a stored batch's verdicts, after checking that the
// retry carries what the batch carried. A batch sent with seal seals its
// partition again if it is open (the seal is an action, not content).
func (s *Server) storedAnswer(ctx context.Context, in batchInput, digest []byte, b storedBatch) (*gatev1.IngestResponse, error) {
	key := batchKey{in.subject, in.partition, in.batchID}
	if b.digest != nil && !sameContent(b.digest, digest, in) {
		return nil, rpcerr.FailedPrecondition("BATCH_ID_REUSED",
			fmt.Sprintf("batch id reused with different content: %s of %s partition %s was ingested at %s with other records (or another first offset, version or replace); a retry must send the same batch — send new content under a new batch id",
				in.batchID, in.subject, in.partition, b.at.UTC().Format(time.RFC3339)),
			map[string]string{"subject": in.subject, "partition": in.partition, "batch_id": in.batchID})
	}
	if b.blocked != nil {
		return nil, blockedError(in, b.blocked)
	}
	var resp *gatev1.IngestResponse
	if b.legacy != nil {
		resp = b.legacy
		if !in.withRecords {
			resp = summaryOnly(resp)
		}
	} else {
		cv, err := s.contracts.resolve(ctx, in.subject, b.version, false)
		if err != nil {
			return nil, err
		}
		reasons, err := s.store.QuarantineReasons(ctx, key)
		if err != nil {
			return nil, err
		}
		recs, err := decodeVerdicts(cv.plan, b.verdicts, reasons)
		if err != nil {
			return nil, fmt.Errorf("batch %s of %s/%s: %w", in.batchID, in.subject, in.partition, err)
		}
		for _, r := range recs {
			r.Sequence = in.sequence
		}
		if in.withRecords && b.accepted > 0 {
			form, kept, ok, err := s.store.Answer(ctx, key, s.cfg.Clock())
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, rpcerr.FailedPrecondition("ANSWER_EXPIRED",
					fmt.Sprintf("batch %s of %s partition %s was ingested at %s; its canonical records are kept only for batches that asked for them, for %s, and are gone — nothing was written twice; ask with summary_only for its verdicts",
						in.batchID, in.subject, in.partition, b.at.UTC().Format(time.RFC3339), s.cfg.AnswerTTL),
					map[string]string{"subject": in.subject, "partition": in.partition, "batch_id": in.batchID})
			}
			if err := decodeAnswer(form, kept, recs); err != nil {
				return nil, fmt.Errorf("batch %s of %s/%s: %w", in.batchID, in.subject, in.partition, err)
			}
		}
		resp = &gatev1.IngestResponse{Records: recs, Summary: &gatev1.BatchSummary{Received: b.received, Accepted: b.accepted, Quarantined: b.quarantined,
			Duplicates: b.duplicates, ContractVersion: b.version, Status: b.status}}
		if len(b.alertSeqs) > 0 {
			if resp.Alerts, err = s.alertsBySeq(ctx, in.subject, b.alertSeqs); err != nil {
				return nil, err
			}
		}
	}
	resp.Summary.Retried = true
	state, err := s.sealIfAsked(ctx, in)
	if err != nil {
		return nil, err
	}
	resp.Partition = state
	return resp, nil
}

// alertsBySeq reads stored alerts of a subject by sequence.
func (s *Server) alertsBySeq(ctx context.Context, subject string, seqs []int64) ([]*gatev1.Alert, error) {
	var out []*gatev1.Alert
	for _, seq := range seqs {
		as, err := s.store.Alerts(ctx, alertFilter{subject: subject}, seq-1, 1)
		if err != nil {
			return nil, err
		}
		if len(as) == 1 && as[0].GetSequence() == seq {
			out = append(out, as[0])
		}
	}
	return out, nil
}

// summaryOnly drops canonical records from a response.
func summaryOnly(r *gatev1.IngestResponse) *gatev1.IngestResponse {
	out := &gatev1.IngestResponse{Summary: r.GetSummary(), Alerts: r.GetAlerts(), Partition: r.GetPartition(), Records: make([]*gatev1.RecordVerdict, len(r.GetRecords()))}
	for i, v := range r.GetRecords() {
		out.Records[i] = &gatev1.RecordVerdict{Index: v.GetIndex(), Position: v.GetPosition(), Status: v.GetStatus(), Reasons: v.GetReasons(), Alerts: v.GetAlerts(), Sequence: v.GetSequence()}
	}
	return out
}

// decode decodes a batch. A batch whose records cannot be delimited is
// refused whole: some of its records could not be accounted for.
func decode(dec *record.Decoder, b *recordv1.RecordBatch) (*record.Batch, recordv1.Format, error) {
	var out *record.Batch
	var err error
	format := recordv1.Format_FORMAT_JSON
	switch body := b.GetBody().(type) {
	case *recordv1.RecordBatch_Raw:
		format = body.Raw.GetFormat()
		out, err = dec.Decode(format, body.Raw.GetData(), b.GetFirstOffset())
	case *recordv1.RecordBatch_Objects:
		out, err = dec.DecodeObjects(body.Objects.GetRecords(), b.GetFirstOffset())
	}
	if err != nil {
		return nil, format, rpcerr.InvalidArgument("the batch cannot be decoded: "+err.Error(),
			rpcerr.FieldViolation{Field: "batch", Description: "fix the encoding at the offset named; records after it cannot be counted, so nothing of the batch was taken"})
	}
	if len(out.Records) == 0 {
		return nil, format, rpcerr.InvalidArgument("the batch holds no records", rpcerr.FieldViolation{Field: "batch", Description: "send at least one record"})
	}
	return out, format, nil
}

// quarantineID is a quarantined record's id: the same record of the same
// batch always gets the same id.
func quarantineID(subject, partition, batchID string, index int64) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s%d:%s%d:%s%d", len(subject), subject, len(partition), partition, len(batchID), batchID, index)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// rawOf returns what a quarantined record keeps as its raw bytes: the
// record as sent, and for CSV the header line first so the row can be
// read (and replayed) on its own.
func rawOf(format recordv1.Format, header []byte, raw []byte) []byte {
	if format != recordv1.Format_FORMAT_CSV {
		return raw
	}
	out := make([]byte, 0, len(header)+1+len(raw))
	out = append(out, header...)
	out = append(out, '\n')
	return append(out, raw...)
}

// csvHeader returns a CSV batch's header line.
func csvHeader(b *recordv1.RecordBatch) []byte {
	data := bytes.TrimPrefix(b.GetRaw().GetData(), []byte("\xef\xbb\xbf"))
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	return bytes.TrimSuffix(data, []byte("\r"))
}

func newOutcome(in batchInput, cv *compiled, format recordv1.Format, b *record.Batch) *outcome {
	n := len(b.Records)
	o := &outcome{in: in, cv: cv, format: format, header: csvHeader(in.batch), raws: make([][]byte, n), resp: &gatev1.IngestResponse{
		Summary: &gatev1.BatchSummary{Received: int64(n), ContractVersion: cv.version},
		Records: make([]*gatev1.RecordVerdict, n),
	}}
	for i := range b.Records {
		o.raws[i] = b.Records[i].Raw
	}
	return o
}

func (o *outcome) quarantine(index, position int64, reasons []*recordv1.RecordError, idState int) {
	o.resp.Records[index] = &gatev1.RecordVerdict{Index: index, Position: position, Status: gatev1.RecordStatus_RECORD_STATUS_QUARANTINED, Reasons: reasons,
		Sequence: o.in.sequence}
	o.quar = append(o.quar, quarantined{id: quarantineID(o.in.subject, o.in.partition, o.in.batchID, index), index: index,
		position: position, raw: rawOf(o.format, o.header, o.raws[index]), reasons: reasons, idState: idState})
}

func (o *outcome) finish() {
	sum := o.resp.Summary
	sum.Quarantined = int64(len(o.quar))
	sum.Accepted = sum.Received - sum.Quarantined
	switch {
	case sum.Quarantined == 0:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_ACCEPTED
	case sum.Accepted == 0:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_QUARANTINED
	default:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_PARTIAL
	}
}

// withDuplicates is the outcome once the partition's key index has
// spoken: the accepted records whose key was already accepted or released
// in the partition are duplicates. By the contract's key check's policy
// (QUARANTINE unless declared otherwise) they are quarantined with
// DUPLICATE_KEY, counted against that check, and their keys stay out of
// the index; under ALERT they pass, counted. The outcome it is called on
// is not changed (the transaction may run again).
func (o *outcome) withDuplicates(dup []keyed) (*outcome, error) {
	if len(dup) == 0 {
		return o, nil
	}
	vs := o.resp.GetRecords()
	if o.direct {
		// The canonical records are in the packing alone: the verdicts
		// with them are unpacked, changed and packed again.
		if o.packErr != nil {
			return nil, o.packErr
		}
		var err error
		if vs, err = verdict.Expand(o.packed); err != nil {
			return nil, fmt.Errorf("batch %s: unpack its verdicts to mark duplicates: %w", o.in.batchID, err)
		}
	}
	out := *o
	out.packed, out.packErr, out.direct = nil, nil, false // the verdicts change
	out.resp = &gatev1.IngestResponse{Summary: proto.CloneOf(o.resp.GetSummary()), Records: slices.Clone(vs)}
	out.quar = append([]quarantined(nil), o.quar...)
	out.figures = unitFigures{}
	out.figures.add(o.figures)
	idx, _ := o.cv.plan.KeyCheck()
	ch := o.cv.plan.Checks()[idx]
	var samples []int64
	for _, d := range dup {
		v := vs[d.index]
		samples = append(samples, v.GetPosition())
		if ch.Policy == contractPolicyAlert {
			nv := proto.CloneOf(v)
			nv.Alerts = append(nv.Alerts, ch.Name)
			out.resp.Records[d.index] = nv
			continue
		}
		reason := &recordv1.RecordError{Code: recordv1.ErrorCode_ERROR_CODE_DUPLICATE_KEY, Field: ch.Field, Check: ch.Name,
			Message: fmt.Sprintf("duplicate key: a record with this %s was already accepted (or released) in partition %s; resend the partition with replace to correct it, or leave the duplicate held",
				strings.Join(ch.Fields, ", "), o.in.partition)}
		out.quarantine(d.index, v.GetPosition(), []*recordv1.RecordError{reason}, d.idState)
	}
	out.figures.AddFailures(ch.Name, int64(len(dup)), samples)
	out.finish()
	if ch.Policy != contractPolicyAlert {
		out.resp.Summary.Duplicates = int64(len(dup))
	}
	return &out, nil
}

// containmentCheck names, in a held record's reasons, the containment of
// its source.
const containmentCheck = "containment"

// containedOutcome quarantines every record of a contained source's batch
// without validating or adapting it: nothing of it may propagate.
//
// The match rate is the share of a partition's records whose identifier
// resolves; a held record's does not (yet), so each counts as looked up and
// unmatched, and a replay that releases it adds only the match. Otherwise
// containing a source would hide the very drop that made someone contain it.
func containedOutcome(in batchInput, cv *compiled, format recordv1.Format, b *record.Batch, c containment) *outcome {
	o := newOutcome(in, cv, format, b)
	msg := fmt.Sprintf("source %s is contained (by %s: %s); its records are held until it is released and they are replayed", in.subject, c.Principal, c.Reason)
	o.figures.Stats.Rows = int64(len(b.Records))
	idState := idUncounted
	if field := matchRateField(cv); field != "" {
		idState = idUnmatched
		o.idChecked = int64(len(b.Records))
		o.figures.Stats.Fields = map[string]check.FieldStats{field: {IDs: o.idChecked}}
	}
	for i := range b.Records {
		r := &b.Records[i]
		reasons := []*recordv1.RecordError{{Code: recordv1.ErrorCode_ERROR_CODE_SOURCE_CONTAINED, Message: msg, Check: containmentCheck}}
		if r.Err != nil {
			reasons = append(reasons, r.Err)
		}
		o.quarantine(r.Index, r.Position, reasons, idState)
	}
	o.contained = true
	o.figures.Contained = int64(len(b.Records))
	// Measured while contained, never learned from: nothing of it passed.
	o.figures.Values = profile(cv.plan, b, func(int) bool { return false })
	o.finish()
	return o
}

// matchRateField is the identifier field of the contract's first
// match-rate check, or "".
func matchRateField(cv *compiled) string {
	for _, ch := range cv.plan.Checks() {
		if ch.Kind == check.KindMatchRate {
			return ch.Field
		}
	}
	return ""
}

// validate runs the checks, the placement of each record in the partition
// (with a partition time), the adapter and the identifier lookups, which
// are the only network calls of a batch. They run concurrently: the
// adapter maps every decoded record while the gate checks them (a record
// that fails a check is quarantined whatever the adapter answers for it;
// mapping it costs the adapter a little in a bad batch, and saves every
// batch the wait), and the lookups go out once the checks have named the
// identifiers.
func (s *Server) validate(ctx context.Context, in batchInput, cv *compiled, format recordv1.Format, b *record.Batch) (*outcome, error) {
	plan := cv.plan
	o := newOutcome(in, cv, format, b)
	var (
		wg       sync.WaitGroup
		adapted  *adapted
		adaptErr error
		present  [][]bool
		idErr    error
	)
	decoded := make([]*record.Record, 0, len(b.Records))
	for i := range b.Records {
		if b.Records[i].Err == nil {
			decoded = append(decoded, &b.Records[i])
		}
	}
	if len(decoded) > 0 {
		wg.Go(func() {
			adapted, adaptErr = s.adaptRecords(ctx, adaptTarget{cv: cv, partition: in.partition, batchID: in.batchID, records: in.withRecords, direct: in.withRecords && in.packed},
				o.header, decoded, len(b.Records))
		})
	}
	res := plan.ValidatePartition(b.Records, in.partition)
	defer plan.Recycle(res) // what the outcome keeps of res is copied out
	checks := plan.Checks()
	misplaced, times := s.place(cv, in.partition, b, res)
	var passing []*record.Record
	for i := range res.Records {
		if !res.Records[i].Quarantined && misplaced[i] == nil {
			passing = append(passing, &b.Records[i])
		}
	}
	wg.Go(func() { present, idErr = s.lookupIdentifiers(ctx, res.Identifiers) })
	// While the adapter and idmap answer, what needs no answer of theirs:
	// the values' shapes, and the key hashes of the records that passed
	// the checks (the accepted records' are kept).
	values := profileValues(plan, b)
	hashes, hashAt := hashKeys(plan, b, passing)
	wg.Wait()
	if adaptErr != nil && len(passing) > 0 {
		// Without a record to take, the adapter's answer is not needed.
		return nil, adaptErr
	}
	if idErr != nil {
		return nil, peerError(ctx, "idmap", idErr)
	}

	// Identifier match: per record of the first match-rate field, and the
	// batch's counts per field for the partition's statistics.
	recIDState := make([]int, len(b.Records))
	for k, ids := range res.Identifiers {
		matched := int64(0)
		for j, ok := range present[k] {
			if ok {
				matched++
			}
			if k == 0 {
				recIDState[ids.Records[j]] = idUnmatched
				if ok {
					recIDState[ids.Records[j]] = idMatched
				}
			}
		}
		fs := res.Stats.Fields[ids.Field]
		fs.Matched = matched
		res.Stats.Fields[ids.Field] = fs
		if k == 0 {
			o.idChecked, o.idMatched = int64(len(ids.Values)), matched
		}
	}
	o.figures.AddBatch(plan, res)
	o.figures.Shapes = shapes(plan, b, res)

	var mapping, placement []int64
	// The accepted records' verdicts are cut from one allocation rather
	// than one per record.
	accepted := make([]gatev1.RecordVerdict, len(b.Records))
	o.keys = make([]keyed, 0, len(passing))
	for i := range b.Records {
		r := &b.Records[i]
		rr := &res.Records[i]
		var alerts []string
		var reasons []*recordv1.RecordError
		for _, f := range rr.Failures {
			ch := &checks[f.Check]
			if ch.Policy == contractPolicyAlert {
				alerts = append(alerts, ch.Name)
				continue
			}
			reasons = append(reasons, &recordv1.RecordError{Code: f.Code, Field: f.Field, Message: f.Message, Check: ch.Name})
		}
		if rr.Quarantined {
			o.quarantine(r.Index, r.Position, reasons, recIDState[i])
			o.resp.Records[i].Alerts = alerts
			continue
		}
		if m := misplaced[i]; m != nil {
			placement = append(placement, r.Position)
			o.quarantine(r.Index, r.Position, []*recordv1.RecordError{m}, recIDState[i])
			o.resp.Records[i].Alerts = alerts
			continue
		}
		var ar *adapterv1.AdaptResult
		if adapted != nil {
			ar = adapted.results[r.Index]
		}
		switch {
		case ar == nil:
			return nil, rpcerr.Unavailable("adapter", fmt.Errorf("the adapter returned no result for record %d of %d", r.Index, len(b.Records)))
		case len(ar.GetErrors()) > 0:
			for _, e := range ar.GetErrors() {
				if e.GetCheck() == "" {
					e.Check = "mapping"
				}
			}
			mapping = append(mapping, r.Position)
			o.quarantine(r.Index, r.Position, ar.GetErrors(), recIDState[i])
			o.resp.Records[i].Alerts = alerts
		default:
			v := &accepted[i]
			v.Index, v.Position, v.Status, v.Record, v.Alerts, v.Sequence = r.Index, r.Position, gatev1.RecordStatus_RECORD_STATUS_ACCEPTED, ar.GetRecord(), alerts, in.sequence
			o.resp.Records[i] = v
			if times != nil && times[i].After(o.maxTime) {
				o.maxTime = times[i]
			}
			if k := hashAt[i]; k > 0 {
				o.keys = append(o.keys, keyed{index: r.Index, hash: hashes[16*(k-1) : 16*k : 16*k], idState: recIDState[i]})
			}
		}
	}
	if len(mapping) > 0 {
		o.figures.AddFailures("mapping", int64(len(mapping)), mapping)
	}
	if len(placement) > 0 {
		o.figures.AddFailures("partition_time", int64(len(placement)), placement)
	}
	o.figures.Values = values.figures(func(i int) bool { return o.resp.Records[i].GetStatus() == gatev1.RecordStatus_RECORD_STATUS_ACCEPTED })
	o.finish()
	if adapted != nil && adapted.direct {
		// The accepted records' canonical records are packed straight
		// from the adapter's answers; their verdicts carry none.
		o.direct = true
		o.packed, o.packErr = packDirect(o.resp.GetRecords(), adapted)
	}
	return o, nil
}

// hashKeys hashes the key of each record of recs (records of b) that has
// one: the hashes lie side by side, and hashAt[i] is 1 + the position of
// record i's among them, 0 for a record without one.
func hashKeys(plan *check.Plan, b *record.Batch, recs []*record.Record) (hashes []byte, hashAt []int) {
	hashes, hashAt = make([]byte, 0, 16*len(recs)), make([]int, len(b.Records))
	var key []byte
	for _, r := range recs {
		var ok bool
		if key, ok = plan.AppendKey(key[:0], r.Values); ok {
			sum := sha256.Sum256(key)
			hashes = append(hashes, sum[:16]...)
			hashAt[r.Index] = len(hashes) / 16
		}
	}
	return hashes, hashAt
}

// place checks, with a partition time, that each record that passed the
// checks belongs to the partition it was sent for, and returns the
// misplaced ones' reasons and every record's event time, by index.
func (s *Server) place(cv *compiled, part string, b *record.Batch, res *check.BatchResult) (map[int]*recordv1.RecordError, []time.Time) {
	spec := cv.spec
	if spec == nil {
		return nil, nil
	}
	slot, ok := cv.plan.Schema().Lookup(spec.Field)
	if !ok {
		return nil, nil
	}
	misplaced := map[int]*recordv1.RecordError{}
	times := make([]time.Time, len(b.Records))
	for i := range b.Records {
		if res.Records[i].Quarantined {
			continue
		}
		t, err := spec.Time(b.Records[i].Values[slot])
		switch {
		case err != nil:
			misplaced[i] = &recordv1.RecordError{Code: recordv1.ErrorCode_ERROR_CODE_OUTSIDE_PARTITION, Field: spec.Field, Check: "partition_time", Message: err.Error()}
		case spec.Name(t) != part:
			misplaced[i] = &recordv1.RecordError{Code: recordv1.ErrorCode_ERROR_CODE_OUTSIDE_PARTITION, Field: spec.Field, Check: "partition_time",
				Message: fmt.Sprintf("field %s: %s places the record in partition %s, but its batch was sent for partition %s; send it with its own partition",
					spec.Field, t.Format(time.RFC3339Nano), spec.Name(t), part)}
		default:
			times[i] = t
		}
	}
	return misplaced, times
}

// peerError turns a failed call to a peer service into the gate's answer,
// wrapped once by rpcerr with the peer's details kept: Unavailable (retry)
// when the peer could not answer, so a batch is never passed with values
// missing. ctx is the call's own context: a peer call cut short because
// it ended (the caller went away, or its deadline passed while the peer
// worked) ends the call the same way, and the peer is not blamed.
func peerError(ctx context.Context, peer string, err error) error {
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition:
			// The peer refused the batch itself; that is the caller's to fix
			// and retrying will not help. Keep the peer's message and details
			// (which field, which reason).
			return rpcerr.Relay(st.Code(), fmt.Sprintf("%s refused the batch: %s", peer, st.Message()), err)
		case codes.Canceled, codes.DeadlineExceeded:
			switch {
			case errors.Is(ctx.Err(), context.DeadlineExceeded):
				return rpcerr.Relay(codes.DeadlineExceeded, fmt.Sprintf("the call's deadline passed while %s answered: %s", peer, st.Message()), err)
			case ctx.Err() != nil:
				return rpcerr.Relay(codes.Canceled, fmt.Sprintf("the call to %s was canceled: %s", peer, st.Message()), err)
			}
		}
	}
	return rpcerr.Unavailable(peer, err)
}

// lookupIdentifiers asks idmap, once per identifier field, which of the
// batch's identifier values resolve in their namespace. The values go
// packed in one buffer (ContainsRequest.packed).
func (s *Server) lookupIdentifiers(ctx context.Context, ids []check.IdentifierValues) ([][]bool, error) {
	out := make([][]bool, len(ids))
	for k, iv := range ids {
		if len(iv.Values) == 0 {
			continue
		}
		req := &idmapv1.ContainsRequest{Namespace: iv.Namespace, Format: iv.Format, Packed: idpack.Pack(iv.Values)}
		resp, err := s.idmap.Contains(ctx, req)
		if err != nil {
			return nil, err
		}
		if len(resp.GetPresent()) != len(iv.Values) {
			return nil, fmt.Errorf("idmap answered %d of %d identifiers of %s", len(resp.GetPresent()), len(iv.Values), iv.Field)
		}
		out[k] = resp.GetPresent()
	}
	return out, nil
}

// blockedError is the FAILED_PRECONDITION answer to a batch that an
// earlier version of the gate stored BLOCKED, when it is retried.
func blockedError(in batchInput, d *gatev1.BlockedDetail) error {
	pos := make([]string, len(d.GetSamplePositions()))
	for i, p := range d.GetSamplePositions() {
		pos[i] = fmt.Sprint(p)
	}
	msg := fmt.Sprintf("batch %s of %s partition %s is BLOCKED: check %s failed for %d of %d records, over its threshold (%s); sample positions %s; nothing of the batch was passed on — fix the records and send the batch again under a new batch id",
		in.batchID, in.subject, in.partition, d.GetCheck(), d.GetFailures(), d.GetReceived(), thresholdText(d), strings.Join(pos, ", "))
	return rpcerr.WithDetails(codes.FailedPrecondition, "BATCH_BLOCKED", msg, map[string]string{
		"subject": in.subject, "partition": in.partition, "batch_id": in.batchID, "check": d.GetCheck()}, d)
}
