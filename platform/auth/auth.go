// Package auth authenticates bearer tokens to principals with roles and
// authorizes each RPC against a per-method access table, in one interceptor
// shared by every Seam service.
package auth

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Role is what a principal may do.
type Role string

// The roles. Owners are source teams; their Subjects say which subjects
// (or "prefix.*" patterns) they own. Service is the Seam services' own
// identity when they call each other: it reads, and it alone (besides
// admins) reports events to the registry.
const (
	RoleAdmin    Role = "admin"
	RoleOperator Role = "operator"
	RoleOwner    Role = "owner"
	RolePipeline Role = "pipeline"
	RoleViewer   Role = "viewer"
	RoleService  Role = "service"
)

// AllRoles lists every role, for tables that let any authenticated caller in.
var AllRoles = []Role{RoleAdmin, RoleOperator, RoleOwner, RolePipeline, RoleViewer, RoleService}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, bool) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	return r, slices.Contains(AllRoles, r)
}

// Principal is an authenticated caller.
type Principal struct {
	Name     string
	Roles    []Role
	Subjects []string
	// Team is the team the caller acts for: what it declares (consumers)
	// belongs to that team, and only the team or an admin may change it.
	// A token without a team acts for a team of its own name.
	Team string
	// Expires, when not zero, is when the token stops being accepted.
	Expires time.Time
}

// Expired reports whether p's token has expired at now.
func (p *Principal) Expired(now time.Time) bool {
	return p != nil && !p.Expires.IsZero() && !now.Before(p.Expires)
}

// Scoped reports whether p is limited to the subjects in its list.
func (p *Principal) Scoped() bool {
	return p != nil && len(p.Subjects) > 0
}

// InScope reports whether p may act on subject: a token without a subject
// list may act on every subject, whatever its role; one with a list only on
// the subjects it names, where "b.*" matches every subject that starts
// with "b.". The list limits every role, admins included.
func (p *Principal) InScope(subject string) bool {
	if p == nil {
		return false
	}
	if len(p.Subjects) == 0 {
		return true
	}
	return matchSubject(p.Subjects, subject)
}

func matchSubject(patterns []string, subject string) bool {
	if subject == "" {
		return false
	}
	for _, s := range patterns {
		if s == subject {
			return true
		}
		if prefix, ok := strings.CutSuffix(s, "*"); ok && strings.HasPrefix(subject, prefix) {
			return true
		}
	}
	return false
}

// Has reports whether p has role r.
func (p *Principal) Has(r Role) bool {
	return p != nil && slices.Contains(p.Roles, r)
}

// HasAny reports whether p has one of roles.
func (p *Principal) HasAny(roles []Role) bool {
	for _, r := range roles {
		if p.Has(r) {
			return true
		}
	}
	return false
}

// Owns reports whether p may act as the owner of subject: admins own every
// subject in their scope (all of them without a subject list); owners own
// the subjects in their list, where "shop.*" matches every subject that
// starts with "shop.".
func (p *Principal) Owns(subject string) bool {
	if p == nil {
		return false
	}
	if p.Has(RoleAdmin) {
		return p.InScope(subject)
	}
	if !p.Has(RoleOwner) {
		return false
	}
	return matchSubject(p.Subjects, subject)
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal the interceptor authenticated.
func FromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}

// NameFromContext returns the principal's name, or "anonymous".
func NameFromContext(ctx context.Context) string {
	if p, ok := FromContext(ctx); ok {
		return p.Name
	}
	return "anonymous"
}
