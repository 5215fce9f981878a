package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/interop"
	"github.com/seamdata/seam/core/interop/avro"
	"github.com/seamdata/seam/core/interop/jsonschema"
	"github.com/seamdata/seam/core/interop/odcs"
	"github.com/seamdata/seam/platform/rpcerr"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// ReasonImportLoss is the refusal of a strict document conversion that
// would drop or approximate part of the document.
const ReasonImportLoss = "IMPORT_LOSS"

// contractOf returns the contract of a check or register request: the one
// sent, or the conversion of the document, with its notes.
func contractOf(c *contractv1.Contract, doc *registryv1.ContractDocument) (*contractv1.Contract, []*registryv1.ImportNote, error) {
	switch {
	case c != nil && doc != nil:
		return nil, nil, invalid("give a contract or a document, not both", rpcerr.FieldViolation{Field: "document", Description: "set only one of contract and document"})
	case doc != nil:
		return convertDocument(doc)
	case c == nil:
		return nil, nil, required("contract", "a contract loaded from YAML, or a document in Seam, ODCS or JSON Schema form")
	}
	return c, nil, nil
}

// convertDocument converts a document in one of the formats the registry
// reads. Malformed documents and strict losses are invalid requests naming
// what and where.
func convertDocument(doc *registryv1.ContractDocument) (*contractv1.Contract, []*registryv1.ImportNote, error) {
	const source = "document"
	data := []byte(doc.GetContent())
	if len(data) == 0 {
		return nil, nil, required("document.content", "the text of an ODCS contract, a JSON Schema or a Seam contract")
	}
	var (
		c   *contractv1.Contract
		rep interop.Report
		err error
	)
	switch doc.GetFormat() {
	case registryv1.ContractFormat_CONTRACT_FORMAT_SEAM, registryv1.ContractFormat_CONTRACT_FORMAT_UNSPECIFIED:
		c, err = contract.Load(data, source)
	case registryv1.ContractFormat_CONTRACT_FORMAT_ODCS:
		var res *odcs.Result
		res, err = odcs.Import(data, odcs.ImportOptions{Source: source, Subject: doc.GetSubject(), Owner: doc.GetOwner(), Object: doc.GetObject(), Strict: doc.GetStrict()})
		if res != nil {
			rep = res.Report
		}
		if err == nil && len(res.Contracts) != 1 {
			var names []string
			for _, o := range res.Contracts {
				names = append(names, fmt.Sprintf("%q", o.Object))
			}
			return nil, notes(rep), invalid("the ODCS contract has several schema objects", rpcerr.FieldViolation{Field: "document.object",
				Description: fmt.Sprintf("name the one to use: %v (each becomes its own subject)", names)})
		}
		if err == nil {
			c = res.Contracts[0].Contract
		}
	case registryv1.ContractFormat_CONTRACT_FORMAT_JSON_SCHEMA, registryv1.ContractFormat_CONTRACT_FORMAT_AVRO:
		importer := jsonschema.Import
		if doc.GetFormat() == registryv1.ContractFormat_CONTRACT_FORMAT_AVRO {
			importer = avro.Import
		}
		var res *interop.Result
		res, err = importer(data, interop.ImportOptions{Source: source, Subject: doc.GetSubject(), Owner: doc.GetOwner(), Strict: doc.GetStrict()})
		if res != nil {
			rep = res.Report
			c = res.Contract
		}
	default:
		return nil, nil, invalid("unknown document format", rpcerr.FieldViolation{Field: "document.format", Description: fmt.Sprintf("%v; want SEAM, ODCS, JSON_SCHEMA or AVRO", doc.GetFormat())})
	}
	var loss *interop.LossError
	switch {
	case errors.As(err, &loss):
		vs := make([]rpcerr.FieldViolation, 0, len(loss.Notes))
		for _, n := range loss.Notes {
			vs = append(vs, rpcerr.FieldViolation{Field: "document." + n.Path, Description: n.Kind.String() + ": " + n.Message})
		}
		return nil, notes(rep), invalid("strict conversion refused: parts of the document have no exact Seam equivalent (send without strict to accept them as reported)", vs...)
	case err != nil:
		return nil, notes(rep), invalid("the document cannot be converted", rpcerr.FieldViolation{Field: "document.content", Description: err.Error()})
	}
	return c, notes(rep), nil
}

// schemaOf returns the schema document a version registered from doc
// keeps, without its id: JSON Schema and Avro documents in normalized form
// (compact JSON; Avro also with its keys sorted), nil for other formats. Registering the
// same schema written with other spacing then finds the same id.
func schemaOf(doc *registryv1.ContractDocument) (*registryv1.Schema, error) {
	text := strings.TrimSpace(doc.GetContent())
	switch doc.GetFormat() {
	case registryv1.ContractFormat_CONTRACT_FORMAT_AVRO:
		norm, err := avro.Normalize(text)
		if err != nil {
			return nil, invalid("the Avro schema cannot be read", rpcerr.FieldViolation{Field: "document.content", Description: err.Error()})
		}
		text = norm
	case registryv1.ContractFormat_CONTRACT_FORMAT_JSON_SCHEMA:
		// A JSON Schema written as YAML keeps its text as sent.
		var buf bytes.Buffer
		if json.Valid([]byte(text)) && json.Compact(&buf, []byte(text)) == nil {
			text = buf.String()
		}
	default:
		return nil, nil
	}
	return &registryv1.Schema{Format: doc.GetFormat(), Text: text}, nil
}

// inherit fills in, on c converted from a schema document, what the
// subject's latest contract says and schema languages cannot: a version
// registered by a Kafka serializer keeps the subject's owner, notice,
// compatibility, checks and mapping (see ContractDocument.inherit).
func inherit(c, latest *contractv1.Contract) {
	if latest == nil {
		return
	}
	c.Owner = latest.GetOwner()
	if c.GetCompatibility() == contractv1.Compatibility_COMPATIBILITY_UNSPECIFIED {
		c.Compatibility = latest.GetCompatibility()
	}
	if c.GetNoticePeriod() == "" {
		c.NoticePeriod = latest.GetNoticePeriod()
	}
	if len(c.GetChecks()) == 0 {
		c.Checks = latest.GetChecks()
	}
	if c.GetMapping() == nil {
		c.Mapping = latest.GetMapping()
	}
	if c.GetPartitionTime() == nil {
		c.PartitionTime = latest.GetPartitionTime()
	}
	if c.GetAdditionalFields() == contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED {
		c.AdditionalFields = latest.GetAdditionalFields()
	}
	if len(latest.GetLabels()) > 0 {
		labels := maps.Clone(latest.GetLabels())
		maps.Copy(labels, c.GetLabels())
		c.Labels = labels
	}
}

var noteKinds = map[interop.Kind]registryv1.ImportNoteKind{
	interop.Dropped:      registryv1.ImportNoteKind_IMPORT_NOTE_KIND_DROPPED,
	interop.Approximated: registryv1.ImportNoteKind_IMPORT_NOTE_KIND_APPROXIMATED,
	interop.Kept:         registryv1.ImportNoteKind_IMPORT_NOTE_KIND_KEPT,
	interop.Caveat:       registryv1.ImportNoteKind_IMPORT_NOTE_KIND_CAVEAT,
}

func notes(rep interop.Report) []*registryv1.ImportNote {
	out := make([]*registryv1.ImportNote, 0, len(rep.Notes))
	for _, n := range rep.Notes {
		out = append(out, &registryv1.ImportNote{Path: n.Path, Kind: noteKinds[n.Kind], Message: n.Message})
	}
	return out
}

// canonicalModelOf returns the model of a register request: the one sent,
// or the model written as Seam YAML or JSON text in the document.
func canonicalModelOf(m *contractv1.CanonicalModel, doc *registryv1.ContractDocument) (*contractv1.CanonicalModel, error) {
	if doc == nil {
		return m, nil
	}
	if m != nil {
		return nil, invalid("give a model or a document, not both", rpcerr.FieldViolation{Field: "document", Description: "set only one of model and document"})
	}
	if f := doc.GetFormat(); f != registryv1.ContractFormat_CONTRACT_FORMAT_SEAM && f != registryv1.ContractFormat_CONTRACT_FORMAT_UNSPECIFIED {
		return nil, invalid("canonical models are written in Seam's form", rpcerr.FieldViolation{Field: "document.format", Description: "want SEAM"})
	}
	m, err := contract.LoadCanonicalModel([]byte(doc.GetContent()), "document")
	if err != nil {
		return nil, invalid("the document cannot be read", rpcerr.FieldViolation{Field: "document.content", Description: err.Error()})
	}
	return m, nil
}
