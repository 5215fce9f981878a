package registry

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// publishable are the event types other services report; the registry
// writes the others itself.
var publishable = map[registryv1.EventType]bool{
	registryv1.EventType_EVENT_TYPE_SOURCE_CONTAINED:   true,
	registryv1.EventType_EVENT_TYPE_SOURCE_RELEASED:    true,
	registryv1.EventType_EVENT_TYPE_BACKFILL_COMPLETED: true,
	registryv1.EventType_EVENT_TYPE_UNANNOUNCED_CHANGE: true,
	registryv1.EventType_EVENT_TYPE_ALERT_RAISED:       true,
	registryv1.EventType_EVENT_TYPE_ALERT_ACKNOWLEDGED: true,
	registryv1.EventType_EVENT_TYPE_ALERT_RESOLVED:     true,
	registryv1.EventType_EVENT_TYPE_PARTITION_SEALED:   true,
}

// publishEvent appends an event another service reports. The registry
// assigns its sequence, time and principal; a BACKFILL_COMPLETED without
// consumers gets the subject's rerun order, so downstream teams learn what
// to rerun.
func (s *Server) publishEvent(ctx context.Context, p *auth.Principal, req *registryv1.PublishEventRequest) (*registryv1.PublishEventResponse, error) {
	in := req.GetEvent()
	if in == nil {
		return nil, required("event", "an event of type SOURCE_CONTAINED")
	}
	if !publishable[in.GetType()] {
		return nil, invalid("this event type cannot be published", rpcerr.FieldViolation{Field: "event.type",
			Description: fmt.Sprintf("%s is written by the registry itself; publish SOURCE_CONTAINED, SOURCE_RELEASED, BACKFILL_COMPLETED, UNANNOUNCED_CHANGE, ALERT_RAISED, ALERT_ACKNOWLEDGED, ALERT_RESOLVED or PARTITION_SEALED", in.GetType())})
	}
	if in.GetSubject() == "" {
		return nil, required("event.subject", `"shop.orders"`)
	}
	e := proto.Clone(in).(*registryv1.Event)
	e.Sequence, e.Time, e.Principal = 0, timestamppb.New(s.clock()), p.Name
	err := s.store.Write(ctx, func(tx StoreTx) error {
		if e.GetType() == registryv1.EventType_EVENT_TYPE_BACKFILL_COMPLETED && len(in.GetConsumers()) == 0 {
			consumers, err := tx.Consumers()
			if err != nil {
				return err
			}
			subj, history, err := tx.Subject(e.GetSubject())
			if err != nil {
				return err
			}
			order, err := rerunOrder(consumers, rerunRoot{subject: e.GetSubject(), canonical: canonicalModelsOf(history, e.GetVersion(), subj.GetActiveVersion())})
			if err != nil {
				return cycleRefusal(err)
			}
			e.Consumers = order
		}
		return tx.AppendEvent(e)
	})
	if err != nil {
		return nil, err
	}
	s.sync(ctx)
	return &registryv1.PublishEventResponse{Event: e}, nil
}
