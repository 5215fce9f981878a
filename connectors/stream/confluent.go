package stream

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/interop/avro"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Confluent's wire format: a message is the magic byte 0, the schema's
// global id as 4 bytes big-endian, then the payload (Avro binary, or JSON
// text for JSON Schema). The connector reads the schema of each id from
// the registry, decodes the payload into the JSON record the gate judges,
// and sends it with the contract version registered from that schema.
const (
	confluentMagic  = 0
	confluentHeader = 5
)

// framedSchema is what the connector knows of one schema id.
type framedSchema struct {
	version int32
	avro    *avro.Decoder // nil for JSON Schema
}

// schemaCache resolves schema ids through the registry. Ids are never
// reused, so what an id names is cached for good; an unknown id is asked
// again with the next batch.
type schemaCache struct {
	mu    sync.Mutex
	known map[int32]*framedSchema
}

// framed is one message's decoding: the record to send, and its contract
// version (0 when it is sent to quarantine).
type framed struct {
	value   []byte
	version int32
}

// unframe decodes every message of a batch in Confluent's wire format. A
// message that is not framed, names an id the registry does not know or
// registered for another subject, or whose payload does not decode, is
// sent as a line that is not JSON and says why (with the message in
// base64), so the gate quarantines it with its reason and raw bytes:
// never dropped.
func (c *Connector) unframe(ctx context.Context, msgs []Message) ([]framed, error) {
	out := make([]framed, len(msgs))
	unknown := map[int32]string{}
	for i, m := range msgs {
		reason := ""
		v := m.Value
		switch {
		case len(v) < confluentHeader || v[0] != confluentMagic:
			reason = fmt.Sprintf("not in Confluent's wire format (magic byte 0 and a 4-byte schema id): %d bytes starting %q", len(v), prefix(v))
		default:
			id := int32(binary.BigEndian.Uint32(v[1:confluentHeader]))
			fs, why, err := c.schemaOf(ctx, id, unknown)
			if err != nil {
				return nil, err
			}
			if fs == nil {
				reason = why
				break
			}
			payload := v[confluentHeader:]
			if fs.avro == nil {
				if !json.Valid(payload) {
					reason = fmt.Sprintf("schema id %d is a JSON Schema but the payload is not JSON", id)
					break
				}
				out[i] = framed{value: payload, version: fs.version}
				continue
			}
			rec, err := fs.avro.Decode(payload)
			if err != nil {
				reason = fmt.Sprintf("schema id %d: %v", id, err)
				break
			}
			out[i] = framed{value: rec, version: fs.version}
			continue
		}
		out[i] = quarantineLine(reason, v)
	}
	// The gate refuses a whole batch sent with a retired or a scheduled
	// version; a message whose schema names one is quarantined instead.
	// Statuses change, so they are read for every batch that has versions.
	var versions []int32
	for _, f := range out {
		if f.version != 0 && !slices.Contains(versions, f.version) {
			versions = append(versions, f.version)
		}
	}
	if len(versions) == 0 {
		return out, nil
	}
	var list *registryv1.ListContractsResponse
	if err := c.retry(ctx, "read the versions of "+c.cfg.Subject, func(ctx context.Context) error {
		var err error
		list, err = c.registry.ListContracts(ctx, &registryv1.ListContractsRequest{Subject: c.cfg.Subject})
		return err
	}); err != nil {
		return nil, err
	}
	why := map[int32]string{}
	for _, v := range list.GetVersions() {
		switch v.GetStatus() {
		case registryv1.VersionStatus_VERSION_STATUS_RETIRED:
			why[v.GetVersion()] = fmt.Sprintf("version %d of %s, which its schema id names, is retired (deleted through the schema registry API)", v.GetVersion(), c.cfg.Subject)
		case registryv1.VersionStatus_VERSION_STATUS_SCHEDULED:
			why[v.GetVersion()] = fmt.Sprintf("version %d of %s, which its schema id names, is scheduled and not in effect before %s",
				v.GetVersion(), c.cfg.Subject, v.GetEffectiveTime().AsTime().UTC().Format(time.RFC3339))
		}
	}
	for i, f := range out {
		if reason, ok := why[f.version]; ok {
			out[i] = quarantineLine(reason, msgs[i].Value)
		}
	}
	return out, nil
}

// quarantineLine is what is sent for a message that cannot be judged: a
// line that is not JSON, so the gate quarantines it, saying why and
// carrying the message in base64.
func quarantineLine(reason string, v []byte) framed {
	return framed{value: []byte("confluent wire format: " + reason + "; message (base64): " + base64.StdEncoding.EncodeToString(v))}
}

func prefix(b []byte) []byte {
	if len(b) > 8 {
		return b[:8]
	}
	return b
}

// schemaOf returns the decoder and contract version of a schema id, or
// why there is none. unknown remembers, for one batch, ids already asked
// for in vain.
func (c *Connector) schemaOf(ctx context.Context, id int32, unknown map[int32]string) (*framedSchema, string, error) {
	c.schemas.mu.Lock()
	fs := c.schemas.known[id]
	c.schemas.mu.Unlock()
	if fs != nil {
		return fs, "", nil
	}
	if why, ok := unknown[id]; ok {
		return nil, why, nil
	}
	var resp *registryv1.GetSchemaResponse
	err := c.retry(ctx, fmt.Sprintf("read schema id %d", id), func(ctx context.Context) error {
		var err error
		resp, err = c.registry.GetSchema(ctx, &registryv1.GetSchemaRequest{Id: id})
		if status.Code(err) == codes.NotFound {
			resp, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if resp == nil {
		unknown[id] = fmt.Sprintf("unknown schema id %d: the registry has no schema with this id (register it, then replay the quarantined records)", id)
		return nil, unknown[id], nil
	}
	var version int32
	var others []string
	for _, v := range resp.GetVersions() {
		if v.GetSubject() == c.cfg.Subject {
			version = max(version, v.GetVersion())
		} else {
			others = append(others, fmt.Sprintf("%s v%d", v.GetSubject(), v.GetVersion()))
		}
	}
	if version == 0 {
		unknown[id] = fmt.Sprintf("schema id %d is not a version of subject %s (it is registered for %s)", id, c.cfg.Subject, strings.Join(others, ", "))
		return nil, unknown[id], nil
	}
	fs = &framedSchema{version: version}
	switch f := resp.GetSchema().GetFormat(); f {
	case registryv1.ContractFormat_CONTRACT_FORMAT_AVRO:
		d, err := avro.NewDecoder(resp.GetSchema().GetText())
		if err != nil {
			unknown[id] = fmt.Sprintf("schema id %d: %v", id, err)
			return nil, unknown[id], nil
		}
		fs.avro = d
	case registryv1.ContractFormat_CONTRACT_FORMAT_JSON_SCHEMA:
	default:
		unknown[id] = fmt.Sprintf("schema id %d is a %s document, which the wire format does not carry", id, f)
		return nil, unknown[id], nil
	}
	c.schemas.mu.Lock()
	c.schemas.known[id] = fs
	c.schemas.mu.Unlock()
	return fs, "", nil
}
