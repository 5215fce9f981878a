// Package authtest mints the tokens of a test's callers, and checks a
// service's access table against its gRPC service: every method has a
// rule, every method whose request names a subject is scoped by it, and
// each rule holds for every role with a subject in and out of a token's
// scope.
package authtest

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/seamdata/seam/platform/auth"
)

// Scope is the subject list of the scoped tokens the check uses; InScope
// and OutOfScope are subjects inside and outside it.
const (
	Scope      = "b.*"
	InScope    = "b.orders"
	OutOfScope = "a.orders"
)

// Tokens mints a fresh token for each principal (its name, roles and
// subjects) and returns the set that knows them all, and each token by
// principal name, for a client's credentials.
func Tokens(t testing.TB, principals ...auth.Principal) (*auth.Tokens, map[string]string) {
	t.Helper()
	secrets := map[string]string{}
	var entries []auth.TokenEntry
	for _, p := range principals {
		tok, e := Token(t, p)
		secrets[p.Name] = tok
		entries = append(entries, e)
	}
	set, err := auth.NewTokens(entries)
	if err != nil {
		t.Fatalf("NewTokens: %v", err)
	}
	return set, secrets
}

// Token mints a fresh token for one principal: the token a client sends,
// and its entry for a token set or a tokens file.
func Token(t testing.TB, p auth.Principal) (string, auth.TokenEntry) {
	t.Helper()
	tok, e, err := auth.NewToken(p.Name, p.Roles, p.Subjects)
	if err != nil {
		t.Fatalf("NewToken(%s): %v", p.Name, err)
	}
	return tok, e
}

// CheckTable checks access against the service sd over every method ×
// role × subject in and out of scope. unscoped lists the methods whose
// request has a subject field but that, by decision, are not limited by
// it (with the reason as the value), so the exception is visible.
func CheckTable(t *testing.T, access auth.Access, sd protoreflect.ServiceDescriptor, unscoped map[string]string) {
	t.Helper()
	byName := map[string]protoreflect.MethodDescriptor{}
	for i := range sd.Methods().Len() {
		m := sd.Methods().Get(i)
		byName["/"+string(sd.FullName())+"/"+string(m.Name())] = m
	}
	if err := access.Validate(func(method string) (protoreflect.MessageDescriptor, bool) {
		m, ok := byName[method]
		if !ok {
			return nil, false
		}
		return m.Input(), true
	}); err != nil {
		t.Fatal(err)
	}
	for method, md := range byName {
		rule, ok := access[method]
		if !ok {
			t.Errorf("%s has no access rule", method)
			continue
		}
		path := subjectField(md.Input(), 0)
		if path != "" && rule.Subject == "" {
			if _, ok := unscoped[method]; !ok {
				t.Errorf("%s: the request names a subject (%s) but the access rule is not scoped by it; set Subject or list it as unscoped with a reason", method, path)
			}
		}
		if rule.Subject == "" || rule.Subject == auth.SubjectInHandler {
			continue
		}
		for _, role := range auth.AllRoles {
			for _, sub := range []string{InScope, OutOfScope, ""} {
				p := &auth.Principal{Name: "t", Roles: []auth.Role{role}, Subjects: []string{Scope}}
				req := dynamicpb.NewMessage(md.Input())
				if sub != "" {
					set(req, rule.Subject, sub)
				}
				allowed := access.Allowed(p, method)
				if want := role == auth.RoleAdmin || slices.Contains(rule.Roles, role); allowed != want {
					t.Errorf("%s as %s: allowed %v, want %v", method, role, allowed, want)
				}
				err := access.CheckSubjects(p, method, req)
				if wantOK := sub == InScope; (err == nil) != wantOK || (err != nil && status.Code(err) != codes.PermissionDenied) {
					t.Errorf("%s as %s limited to %s, subject %q: %v, want allowed=%v (PermissionDenied otherwise)", method, role, Scope, sub, err, wantOK)
				}
				// Without a subject list, the subject does not matter.
				p.Subjects = nil
				if err := access.CheckSubjects(p, method, req); err != nil {
					t.Errorf("%s as %s without a subject list, subject %q: %v, want allowed", method, role, sub, err)
				}
			}
		}
	}
}

// subjectField returns the path of a field named subject or subjects in
// md, two levels deep at most.
func subjectField(md protoreflect.MessageDescriptor, depth int) string {
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if (fd.Name() == "subject" || fd.Name() == "subjects") && fd.Kind() == protoreflect.StringKind {
			return string(fd.Name())
		}
	}
	if depth >= 1 {
		return ""
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() && fd.Message().ParentFile().Package() != "google.protobuf" {
			if p := subjectField(fd.Message(), depth+1); p != "" {
				return string(fd.Name()) + "." + p
			}
		}
	}
	return ""
}

// set sets the string (or first element of the repeated string) at path.
func set(m *dynamicpb.Message, path, v string) {
	parts := strings.Split(path, ".")
	var msg protoreflect.Message = m
	for i, part := range parts {
		fd := msg.Descriptor().Fields().ByName(protoreflect.Name(part))
		if i < len(parts)-1 {
			msg = msg.Mutable(fd).Message()
			continue
		}
		if fd.IsList() {
			msg.Mutable(fd).List().Append(protoreflect.ValueOfString(v))
		} else {
			msg.Set(fd, protoreflect.ValueOfString(v))
		}
	}
}
