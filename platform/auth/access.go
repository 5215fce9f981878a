package auth

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seamdata/seam/platform/rpcerr"
)

// Rule says who may call one method: the roles, and where the request
// names the subject the call acts on, so a token limited to subjects
// ("--subject 'b.*'") may call it only for those, whatever its role.
type Rule struct {
	Roles []Role
	// Subject is the request field that names the subject: a field path
	// of proto names ("subject", "filter.subject", "header.subject"), a
	// string or a repeated string (every value must be in scope). On a
	// client stream every message that sets it is checked. Empty means
	// the method acts on no one subject. SubjectInHandler means the
	// subject is known only once the handler has looked the request up
	// (a record or an alert by id), and the handler calls RequireSubject.
	Subject string
}

// SubjectInHandler marks a method whose handler checks the subject scope
// itself, with RequireSubject, once it knows the subject.
const SubjectInHandler = "(handler)"

// Access maps full method names ("/pkg.Service/Method") to who may call
// them. A method missing from the table is refused to everyone but
// admins, so a new RPC is closed until someone decides who may call it.
type Access map[string]Rule

// Merge returns the union of tables.
func Merge(tables ...Access) Access {
	out := Access{}
	for _, t := range tables {
		for m, r := range t {
			out[m] = r
		}
	}
	return out
}

// Roles returns the roles that may call method.
func (a Access) Roles(method string) []Role {
	return a[method].Roles
}

// Allowed reports whether p's roles let it call method. Admins may call
// every method.
func (a Access) Allowed(p *Principal, method string) bool {
	if p.Has(RoleAdmin) {
		return true
	}
	r, ok := a[method]
	return ok && p.HasAny(r.Roles)
}

// CheckSubjects returns PermissionDenied when req names a subject outside
// p's scope on a method whose rule names a subject field, or names none
// while p is limited to subjects. A principal without a subject list
// passes every check.
func (a Access) CheckSubjects(p *Principal, method string, req any) error {
	r := a[method]
	if !p.Scoped() || r.Subject == "" || r.Subject == SubjectInHandler {
		return nil
	}
	msg, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	subjects, set := fieldStrings(msg.ProtoReflect(), r.Subject)
	if !set {
		return rpcerr.PermissionDenied(ReasonOutOfScope, fmt.Sprintf(
			"%s is limited to subjects %s; name one of them in %s to call %s",
			p.Name, strings.Join(p.Subjects, ", "), r.Subject, method))
	}
	for _, s := range subjects {
		if !p.InScope(s) {
			return outOfScope(p, s, r.Subject)
		}
	}
	return nil
}

// checkStreamMessage checks one message of a client stream: a message
// that does not set the subject field (a chunk after its header) passes;
// the stream's first message is checked as a unary request is.
func (a Access) checkStreamMessage(p *Principal, method string, req any, first bool) error {
	r := a[method]
	if !p.Scoped() || r.Subject == "" || r.Subject == SubjectInHandler {
		return nil
	}
	if first {
		return a.CheckSubjects(p, method, req)
	}
	msg, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	subjects, _ := fieldStrings(msg.ProtoReflect(), r.Subject)
	for _, s := range subjects {
		if !p.InScope(s) {
			return outOfScope(p, s, r.Subject)
		}
	}
	return nil
}

// ReasonOutOfScope is the ErrorInfo reason of a call refused because its
// subject is outside the token's subject list.
const ReasonOutOfScope = "SUBJECT_OUT_OF_SCOPE"

// ErrorInfo reasons of calls refused for their credentials or role.
const (
	// ReasonNoToken: the call carries no bearer token (or, past the
	// interceptors, no authenticated caller).
	ReasonNoToken = "TOKEN_MISSING"
	// ReasonMalformedToken: the authorization header is not "Bearer <token>".
	ReasonMalformedToken = "TOKEN_MALFORMED"
	// ReasonUnknownToken: no token of this server has that value (never
	// created here, or revoked).
	ReasonUnknownToken = "TOKEN_UNKNOWN"
	// ReasonExpiredToken: the token's expiry has passed.
	ReasonExpiredToken = "TOKEN_EXPIRED"
	// ReasonRoleDenied: the token's roles may not call the method.
	ReasonRoleDenied = "ROLE_DENIED"
)

func outOfScope(p *Principal, subject, field string) error {
	return rpcerr.PermissionDenied(ReasonOutOfScope, fmt.Sprintf("%s is limited to subjects %s; %s %q is not one of them",
		p.Name, strings.Join(p.Subjects, ", "), field, subject))
}

// RequireSubject returns PermissionDenied when the caller of ctx is
// limited to subjects and subject is not one of them. Handlers of
// SubjectInHandler methods call it once they know the subject.
func RequireSubject(ctx context.Context, subject string) error {
	p, ok := FromContext(ctx)
	if !ok || p.InScope(subject) {
		return nil
	}
	return outOfScope(p, subject, "the subject")
}

// fieldStrings returns the non-empty string values at path in m, and
// whether there is at least one.
func fieldStrings(m protoreflect.Message, path string) ([]string, bool) {
	parts := strings.Split(path, ".")
	for i, part := range parts {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(part))
		if fd == nil {
			return nil, false
		}
		if i < len(parts)-1 {
			if fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap() || !m.Has(fd) {
				return nil, false
			}
			m = m.Get(fd).Message()
			continue
		}
		if fd.Kind() != protoreflect.StringKind {
			return nil, false
		}
		var out []string
		if fd.IsList() {
			l := m.Get(fd).List()
			for j := range l.Len() {
				if s := l.Get(j).String(); s != "" {
					out = append(out, s)
				}
			}
		} else if s := m.Get(fd).String(); s != "" {
			out = append(out, s)
		}
		return out, len(out) > 0
	}
	return nil, false
}

// Validate checks that every subject field path of the table names a
// string field of the method's request, so a typo cannot leave a method
// unscoped. requestOf returns the request descriptor of a method.
func (a Access) Validate(requestOf func(method string) (protoreflect.MessageDescriptor, bool)) error {
	for method, r := range a {
		if r.Subject == "" || r.Subject == SubjectInHandler {
			continue
		}
		md, ok := requestOf(method)
		if !ok {
			return fmt.Errorf("access table: %s: no such method", method)
		}
		parts := strings.Split(r.Subject, ".")
		for i, part := range parts {
			fd := md.Fields().ByName(protoreflect.Name(part))
			if fd == nil {
				return fmt.Errorf("access table: %s: %s has no field %q (subject field %s)", method, md.FullName(), part, r.Subject)
			}
			if i < len(parts)-1 {
				if fd.Kind() != protoreflect.MessageKind {
					return fmt.Errorf("access table: %s: %s.%s is not a message (subject field %s)", method, md.FullName(), part, r.Subject)
				}
				md = fd.Message()
			} else if fd.Kind() != protoreflect.StringKind {
				return fmt.Errorf("access table: %s: %s.%s is not a string (subject field %s)", method, md.FullName(), part, r.Subject)
			}
		}
	}
	return nil
}
