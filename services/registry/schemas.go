package registry

import (
	"context"
	"fmt"
	"strconv"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// GetSchema returns a schema document by global id, or the id a document
// has, with the versions registered from it that the caller may see. A
// schema none of whose versions is in the caller's subject scope is not
// found, so ids do not reveal subjects a token may not read.
func (s *Server) GetSchema(ctx context.Context, req *registryv1.GetSchemaRequest) (*registryv1.GetSchemaResponse, error) {
	p, err := principalOf(ctx)
	if err != nil {
		return nil, err
	}
	var schema *registryv1.Schema
	switch doc := req.GetDocument(); {
	case doc != nil && req.GetId() != 0:
		return nil, invalid("give an id or a document, not both", rpcerr.FieldViolation{Field: "document", Description: "set only one of id and document"})
	case doc != nil:
		want, err := schemaOf(doc)
		if err != nil {
			return nil, err
		}
		if want == nil {
			return nil, invalid("schema ids number JSON Schema and Avro documents", rpcerr.FieldViolation{Field: "document.format",
				Description: fmt.Sprintf("%v; want JSON_SCHEMA or AVRO", doc.GetFormat())})
		}
		if schema, err = s.store.SchemaByText(ctx, want.GetFormat(), want.GetText()); err != nil {
			return nil, err
		}
		if schema == nil {
			return nil, notFound("schema", "(the document sent)", "it was never registered; register it with RegisterContract")
		}
	case req.GetId() > 0:
		if schema, err = s.store.Schema(ctx, req.GetId()); err != nil {
			return nil, err
		}
		if schema == nil {
			return nil, notFound("schema", strconv.Itoa(int(req.GetId())), "no schema has this id")
		}
	default:
		return nil, required("id", "7 (a global schema id), or a document")
	}
	versions, err := s.versionsWithSchema(p, schema.GetId())
	if err != nil {
		return nil, err
	}
	if p.Scoped() && len(versions) == 0 {
		return nil, notFound("schema", strconv.Itoa(int(schema.GetId())), "no version in your subject scope has it")
	}
	return &registryv1.GetSchemaResponse{Schema: schema, Versions: versions}, nil
}

// versionsWithSchema lists the versions registered from schema id that p
// may see, by subject and version.
func (s *Server) versionsWithSchema(p *auth.Principal, id int32) ([]*registryv1.SubjectVersion, error) {
	txn := s.model.snapshot()
	subjects, err := subjectsWithPrefix(txn, nil, "")
	if err != nil {
		return nil, err
	}
	var out []*registryv1.SubjectVersion
	for _, subj := range subjects {
		if !p.InScope(subj.GetName()) {
			continue
		}
		vs, err := versionsOf(txn, nil, subj.GetName())
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if v.GetSchema().GetId() == id {
				out = append(out, &registryv1.SubjectVersion{Subject: v.GetSubject(), Version: v.GetVersion()})
			}
		}
	}
	return out, nil
}
