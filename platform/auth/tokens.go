package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TokenPrefix starts every token Seam issues, so leaked tokens are easy to
// find with secret scanners.
const TokenPrefix = "seam_"

// TokenEntry is one token in a tokens file. Only the SHA-256 of the secret
// is stored: tokens are 160 random bits, so a fast hash is enough and a
// stolen file does not reveal them.
type TokenEntry struct {
	Name     string   `json:"name"`
	Roles    []Role   `json:"roles"`
	Subjects []string `json:"subjects,omitempty"`
	// Team is the team the token acts for; empty means the token's name.
	Team string `json:"team,omitempty"`
	// Hash is "sha256:" followed by the hex digest of the token.
	Hash string `json:"hash"`
	// Expires, when set, is when the token stops being accepted.
	Expires *time.Time `json:"expires,omitempty"`
	// CreatedBy, CreatedAt (RFC 3339) and Reason say who made the token,
	// when and why (seam token create); the services' audit log repeats
	// them when they take the token.
	CreatedBy string `json:"created_by,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// RevokedToken records who revoked a token, when and why (seam token
// revoke), for the services' audit log; the token itself is gone.
type RevokedToken struct {
	Name      string `json:"name"`
	RevokedBy string `json:"revoked_by,omitempty"`
	RevokedAt string `json:"revoked_at,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// TokensFile is the on-disk form of a token set.
type TokensFile struct {
	Tokens []TokenEntry `json:"tokens"`
	// Revoked are the latest revocations, newest last.
	Revoked []RevokedToken `json:"revoked,omitempty"`
}

// Tokens maps token hashes to principals. A set loaded from a file follows
// the file: when it changes (seam token create, revoke, or a new Secret
// mounted in its place), the next call at least ReloadInterval after the
// last look reads it again, so tokens are added and revoked without a
// restart. A file that no longer parses leaves the last good set in force.
type Tokens struct {
	set atomic.Pointer[map[string]*Principal]

	path      string
	nextCheck atomic.Int64 // unix nanoseconds
	mu        sync.Mutex   // one reload at a time
	info      os.FileInfo  // of the file the set was read from
	lastErr   atomic.Pointer[error]
	// entries are the file's tokens by name, to tell what a reload added
	// and removed; audit receives those changes.
	entries map[string]TokenEntry
	audit   atomic.Pointer[slog.Logger]
}

// AuditTo makes a file-backed set write an audit line for each token a
// reload of its file adds (token_created) or removes (token_revoked),
// with who did it and why as the file records them.
func (t *Tokens) AuditTo(log *slog.Logger) {
	if t != nil && log != nil {
		t.audit.Store(log)
	}
}

func byName(entries []TokenEntry) map[string]TokenEntry {
	out := make(map[string]TokenEntry, len(entries))
	for _, e := range entries {
		out[e.Name] = e
	}
	return out
}

// auditChanges logs the tokens f adds to and removes from before.
func (t *Tokens) auditChanges(before map[string]TokenEntry, f TokensFile) {
	log := t.audit.Load()
	if log == nil {
		return
	}
	after := byName(f.Tokens)
	for _, e := range f.Tokens {
		if old, ok := before[e.Name]; ok && old.Hash == e.Hash {
			continue
		}
		log.Info("token created", "event", "token_created", "name", e.Name, "roles", e.Roles, "subjects", e.Subjects,
			"by", e.CreatedBy, "reason", e.Reason, "tokens_file", t.path)
	}
	revoked := map[string]RevokedToken{}
	for _, r := range f.Revoked {
		revoked[r.Name] = r
	}
	for name := range before {
		if _, ok := after[name]; ok {
			continue
		}
		r := revoked[name]
		log.Info("token revoked", "event", "token_revoked", "name", name, "by", r.RevokedBy, "reason", r.Reason, "tokens_file", t.path)
	}
}

// ReloadInterval is how often at most a file-backed token set looks at its
// file.
const ReloadInterval = time.Second

// NewTokens builds a token set from entries, checking each.
func NewTokens(entries []TokenEntry) (*Tokens, error) {
	m, err := principals(entries)
	if err != nil {
		return nil, err
	}
	t := &Tokens{}
	t.set.Store(&m)
	return t, nil
}

func principals(entries []TokenEntry) (map[string]*Principal, error) {
	byHash := make(map[string]*Principal, len(entries))
	for i, e := range entries {
		where := fmt.Sprintf("tokens[%d]", i)
		if e.Name == "" {
			return nil, fmt.Errorf("%s: name is empty; give every token a name", where)
		}
		h, ok := strings.CutPrefix(e.Hash, "sha256:")
		if !ok || len(h) != 64 {
			return nil, fmt.Errorf("%s (%s): hash must be \"sha256:\" and 64 hex digits (use 'seam token create')", where, e.Name)
		}
		if _, err := hex.DecodeString(h); err != nil {
			return nil, fmt.Errorf("%s (%s): hash is not hex: %w", where, e.Name, err)
		}
		if len(e.Roles) == 0 {
			return nil, fmt.Errorf("%s (%s): no roles; give one of admin, operator, owner, pipeline, viewer, service", where, e.Name)
		}
		for _, r := range e.Roles {
			if _, ok := ParseRole(string(r)); !ok {
				return nil, fmt.Errorf("%s (%s): unknown role %q; roles are admin, operator, owner, pipeline, viewer, service", where, e.Name, r)
			}
		}
		team := e.Team
		if team == "" {
			team = e.Name
		}
		p := &Principal{Name: e.Name, Roles: e.Roles, Subjects: e.Subjects, Team: team}
		if e.Expires != nil {
			p.Expires = *e.Expires
		}
		byHash[strings.ToLower(h)] = p
	}
	return byHash, nil
}

// ReadTokensFile reads and checks a tokens file.
func ReadTokensFile(path string) (TokensFile, error) {
	var f TokensFile
	data, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("read tokens file: %w", err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("tokens file %s: %w", path, err)
	}
	if _, err := principals(f.Tokens); err != nil {
		return f, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return f, nil
}

// LoadTokens reads a tokens file into a set that follows the file.
func LoadTokens(path string) (*Tokens, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read tokens file: %w", err)
	}
	f, err := ReadTokensFile(path)
	if err != nil {
		return nil, err
	}
	t, err := NewTokens(f.Tokens)
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	t.path, t.info, t.entries = path, info, byName(f.Tokens)
	t.nextCheck.Store(time.Now().Add(ReloadInterval).UnixNano())
	return t, nil
}

// Authenticate returns the principal of token, when it is known and has
// not expired.
func (t *Tokens) Authenticate(token string) (*Principal, bool) {
	p, ok := t.Lookup(token)
	if !ok || p.Expired(time.Now()) {
		return nil, false
	}
	return p, true
}

// Lookup returns the principal of token, expired or not.
func (t *Tokens) Lookup(token string) (*Principal, bool) {
	if t == nil || token == "" {
		return nil, false
	}
	t.follow()
	p, ok := (*t.set.Load())[HashToken(token)]
	return p, ok
}

// ReloadError returns why the file could not be read again the last time
// it changed, or nil when the set in force is the file's.
func (t *Tokens) ReloadError() error {
	if e := t.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}

// follow reads the file again when it changed since it was last read.
func (t *Tokens) follow() {
	if t.path == "" {
		return
	}
	now := time.Now()
	next := t.nextCheck.Load()
	if now.UnixNano() < next || !t.nextCheck.CompareAndSwap(next, now.Add(ReloadInterval).UnixNano()) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	info, err := os.Stat(t.path)
	if err != nil {
		t.lastErr.Store(&err)
		return
	}
	if os.SameFile(info, t.info) && info.ModTime().Equal(t.info.ModTime()) && info.Size() == t.info.Size() {
		return
	}
	f, err := ReadTokensFile(t.path)
	if err != nil {
		t.lastErr.Store(&err)
		return
	}
	m, _ := principals(f.Tokens) // checked by ReadTokensFile
	t.set.Store(&m)
	t.info = info
	t.lastErr.Store(nil)
	t.auditChanges(t.entries, f)
	t.entries = byName(f.Tokens)
}

// HashToken returns the hex SHA-256 of token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a fresh random token and its tokens-file entry.
func NewToken(name string, roles []Role, subjects []string) (string, TokenEntry, error) {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", TokenEntry{}, fmt.Errorf("generate token: %w", err)
	}
	tok := TokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	return tok, TokenEntry{Name: name, Roles: roles, Subjects: subjects, Hash: "sha256:" + HashToken(tok)}, nil
}

// WriteTokensFile writes f to path with owner-only permissions, atomically.
func WriteTokensFile(path string, f TokensFile) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode tokens file: %w", err)
	}
	return writeFileAtomic(path, append(data, '\n'), 0o600)
}

// writeFileAtomic writes through a synced temporary file and a rename, so a
// crash leaves the old file or the new one.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	// Each step runs only if those before it worked; the file is closed
	// whatever happened, and the first failure is the one reported.
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Bootstrap is what EnsureLocalTokens creates on a first start.
type Bootstrap struct {
	// AdminToken is set only when the file was created now.
	AdminToken string
	// ServiceToken is the token the services use to call each other.
	ServiceToken string
	Created      bool
}

// Local file names inside a data directory.
const (
	TokensFileName       = "tokens.json"
	AdminTokenFileName   = "admin.token"
	ServiceTokenFileName = "service.token"
)

// ErrNoTokens is returned when a tokens file is needed and missing.
var ErrNoTokens = errors.New("no tokens file")

// EnsureLocalTokens makes sure dataDir holds a tokens file. On the first
// start it creates one with an admin token and an internal service token,
// writes both tokens to owner-only files beside it (so the local `seam`
// client finds the admin token without flags) and reports them. A file an
// older Seam created, whose service token lacks the service role, gets it.
func EnsureLocalTokens(dataDir string) (Bootstrap, error) {
	path := filepath.Join(dataDir, TokensFileName)
	if _, err := os.Stat(path); err == nil {
		svc, err := os.ReadFile(filepath.Join(dataDir, ServiceTokenFileName))
		if err != nil {
			return Bootstrap{}, fmt.Errorf("%s exists but the service token is unreadable: %w", path, err)
		}
		token := strings.TrimSpace(string(svc))
		if err := grantServiceRole(path, token); err != nil {
			return Bootstrap{}, err
		}
		return Bootstrap{ServiceToken: token}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return Bootstrap{}, fmt.Errorf("check tokens file: %w", err)
	}
	admin, adminEntry, err := NewToken("admin", []Role{RoleAdmin}, nil)
	if err != nil {
		return Bootstrap{}, err
	}
	svc, svcEntry, err := NewToken("seam-services", []Role{RoleService}, nil)
	if err != nil {
		return Bootstrap{}, err
	}
	if err := writeFileAtomic(filepath.Join(dataDir, AdminTokenFileName), []byte(admin+"\n"), 0o600); err != nil {
		return Bootstrap{}, err
	}
	if err := writeFileAtomic(filepath.Join(dataDir, ServiceTokenFileName), []byte(svc+"\n"), 0o600); err != nil {
		return Bootstrap{}, err
	}
	if err := WriteTokensFile(path, TokensFile{Tokens: []TokenEntry{adminEntry, svcEntry}}); err != nil {
		return Bootstrap{}, err
	}
	return Bootstrap{AdminToken: admin, ServiceToken: svc, Created: true}, nil
}

// grantServiceRole gives the entry of token in the tokens file at path the
// service role, which earlier Seams did not have: their services called
// with operator and pipeline, and now only the service role may report
// registry events.
func grantServiceRole(path, token string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read tokens file: %w", err)
	}
	var f TokensFile
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("tokens file %s: %w", path, err)
	}
	want := "sha256:" + HashToken(token)
	for i, e := range f.Tokens {
		if strings.EqualFold(e.Hash, want) && !slices.Contains(e.Roles, RoleService) {
			f.Tokens[i].Roles = append(f.Tokens[i].Roles, RoleService)
			return WriteTokensFile(path, f)
		}
	}
	return nil
}
