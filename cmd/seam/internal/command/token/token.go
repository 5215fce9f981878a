// Package token holds `seam token`: create, list and revoke the bearer
// tokens of a tokens file. Every seam process reads its tokens file again
// when it changes, so a token works (or stops working) within about a
// second, without a restart.
package token

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/platform/auth"
)

// files are the flags that say which tokens file a command edits.
type files struct {
	dataDir, tokensFile string
}

func (f *files) add(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&f.dataDir, "data-dir", client.DefaultDataDir, "data directory of seam up, whose tokens.json is edited")
	cmd.PersistentFlags().StringVar(&f.tokensFile, "tokens-file", "", "tokens file to edit (default: <data-dir>/tokens.json); the one the services read with --tokens-file")
}

func (f *files) path() string {
	if f.tokensFile != "" {
		return f.tokensFile
	}
	return filepath.Join(f.dataDir, auth.TokensFileName)
}

func (f *files) read() (auth.TokensFile, error) {
	tf, err := auth.ReadTokensFile(f.path())
	if errors.Is(err, fs.ErrNotExist) {
		return tf, exit.Usagef("no tokens file at %s: run seam up once to create one, or give --tokens-file", f.path())
	}
	if err != nil {
		return tf, exit.Invalidf("%w", err)
	}
	return tf, nil
}

// New returns the `seam token` group.
func New(g *client.Globals) *cobra.Command {
	var f files
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke the tokens that may call Seam",
		Long: `Edit a tokens file: the names, roles and subjects of the bearer tokens Seam
accepts, stored as SHA-256 hashes. Every seam process reads its tokens file
again when it changes (checked at most once a second), so a token created
here works at once, and a revoked one stops working, without a restart.

With several replicas, each process reads its own --tokens-file: edit the
file every replica mounts (on Kubernetes, the Secret behind it, which the
kubelet updates in place; see deploy/README.md).

Roles: admin (everything), operator (contain, release, replay, load id
tables), owner (register versions of its --subject patterns), pipeline
(ingest), viewer (read).`,
		Example: `  seam token create ci-payments --role owner --subject 'payments.*'
  seam token create nightly-loader --role pipeline
  seam token list
  seam token revoke nightly-loader`,
	}
	f.add(cmd)
	g.AddOutputFlag(cmd.PersistentFlags())
	cmd.AddCommand(newCreateCmd(g, &f), newListCmd(g, &f), newRevokeCmd(g, &f))
	return cmd
}

// operatorName is who runs the command, for the services' audit log.
func operatorName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return name
	}
	return "unknown"
}

// maxRevoked bounds the revocations a tokens file keeps for the audit log.
const maxRevoked = 100

func newCreateCmd(g *client.Globals, f *files) *cobra.Command {
	var roles, subjects []string
	var expires string
	var reason string
	return g.Local("create NAME --role ROLE [--role ROLE] [--subject PATTERN] [--expires DURATION]", cobra.ExactArgs(1), client.Help{
		Short: "Create a token and print it (once)",
		Example: `  seam token create ci-payments --role owner --subject 'payments.*' --reason "CI of the payments team"
  seam token create contractor --role viewer --expires 30d
  seam token create dashboards --role viewer -o json`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringSliceVar(&roles, "role", nil, "role of the token (repeatable): admin, operator, owner, pipeline, viewer")
			fs.StringSliceVar(&subjects, "subject", nil, "subject or prefix.* pattern the token is limited to, whatever its role (repeatable)")
			fs.StringVar(&expires, "expires", "", "how long the token works (30d, 12h, 1d12h); by default it never expires")
			fs.StringVar(&reason, "reason", "", "why the token exists; kept in the file with who created it, and written to the services' audit log")
		},
	}, func(cmd *cobra.Command, args []string) error {
		name := strings.TrimSpace(args[0])
		if name == "" {
			return exit.Usagef("name the token: seam token create NAME --role ROLE")
		}
		if len(roles) == 0 {
			return exit.Usagef("give at least one --role: admin, operator, owner, pipeline or viewer")
		}
		var rs []auth.Role
		for _, r := range roles {
			role, ok := auth.ParseRole(r)
			if !ok {
				return exit.Usagef("--role %q: use admin, operator, owner, pipeline or viewer", r)
			}
			rs = append(rs, role)
		}
		if slices.Contains(rs, auth.RoleOwner) && len(subjects) == 0 {
			return exit.Usagef("an owner owns subjects: give --subject (a subject, or a prefix.* pattern)")
		}
		var until *time.Time
		if expires != "" {
			d, err := contract.ParseNoticePeriod(expires)
			if err != nil || d <= 0 {
				return exit.Usagef("--expires %q: give how long the token works, such as 30d, 12h or 1d12h", expires)
			}
			t := time.Now().UTC().Add(d).Truncate(time.Second)
			until = &t
		}
		tf, err := f.read()
		if err != nil {
			return err
		}
		for _, e := range tf.Tokens {
			if e.Name == name {
				return exit.Usagef("a token named %q is in %s; revoke it first or choose another name", name, f.path())
			}
		}
		tok, entry, err := auth.NewToken(name, rs, subjects)
		if err != nil {
			return err
		}
		entry.Expires = until
		entry.CreatedBy, entry.CreatedAt, entry.Reason = operatorName(), time.Now().UTC().Format(time.RFC3339), strings.TrimSpace(reason)
		tf.Tokens = append(tf.Tokens, entry)
		if err := auth.WriteTokensFile(f.path(), tf); err != nil {
			return exit.Usagef("%w", err)
		}
		w := cmd.OutOrStdout()
		if g.JSON() {
			out := map[string]any{"name": name, "roles": rs, "subjects": subjects, "token": tok, "tokens_file": f.path()}
			if until != nil {
				out["expires"] = until.Format(time.RFC3339)
			}
			return output.Value(w, out)
		}
		fmt.Fprintf(w, "created token %s (%s) in %s; it is shown this once:\n%s\n", name, describe(entry), f.path(), tok)
		return nil
	})
}

func describe(e auth.TokenEntry) string {
	var roles []string
	for _, r := range e.Roles {
		roles = append(roles, string(r))
	}
	s := "roles " + strings.Join(roles, ",")
	if len(e.Subjects) > 0 {
		s += "; subjects " + strings.Join(e.Subjects, ",")
	}
	if e.Expires != nil {
		s += "; expires " + e.Expires.UTC().Format(time.RFC3339)
	}
	return s
}

// expiry shows when a token expires: "-" for never, and a mark once past.
func expiry(e auth.TokenEntry, now time.Time) string {
	if e.Expires == nil {
		return "-"
	}
	s := e.Expires.UTC().Format(time.RFC3339)
	if !now.Before(*e.Expires) {
		s += " (expired)"
	}
	return s
}

func newListCmd(g *client.Globals, f *files) *cobra.Command {
	return g.Local("list", cobra.NoArgs, client.Help{
		Short:   "List the tokens of the file: names, roles, subjects and expiry (never the tokens)",
		Example: "  seam token list -o json",
	}, func(cmd *cobra.Command, _ []string) error {
		tf, err := f.read()
		if err != nil {
			return err
		}
		if g.JSON() {
			type row struct {
				Name     string      `json:"name"`
				Roles    []auth.Role `json:"roles"`
				Subjects []string    `json:"subjects"`
				Expires  string      `json:"expires,omitempty"`
				Expired  bool        `json:"expired,omitempty"`
			}
			rows := []row{}
			now := time.Now()
			for _, e := range tf.Tokens {
				r := row{Name: e.Name, Roles: e.Roles, Subjects: e.Subjects}
				if e.Expires != nil {
					r.Expires, r.Expired = e.Expires.UTC().Format(time.RFC3339), !now.Before(*e.Expires)
				}
				rows = append(rows, r)
			}
			return output.Value(cmd.OutOrStdout(), map[string]any{"tokens_file": f.path(), "tokens": rows})
		}
		t := output.NewTable(cmd.OutOrStdout(), "NAME", "ROLES", "SUBJECTS", "EXPIRES")
		now := time.Now()
		for _, e := range tf.Tokens {
			var roles []string
			for _, r := range e.Roles {
				roles = append(roles, string(r))
			}
			t.Row(e.Name, strings.Join(roles, ","), output.OrDash(strings.Join(e.Subjects, ",")), expiry(e, now))
		}
		return t.Flush()
	})
}

func newRevokeCmd(g *client.Globals, f *files) *cobra.Command {
	var reason string
	return g.Local("revoke NAME", cobra.ExactArgs(1), client.Help{
		Short:   "Remove a token: calls with it are refused within a second",
		Example: `  seam token revoke nightly-loader --reason "the loader moved to a service account"`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&reason, "reason", "", "why the token is revoked; kept in the file with who revoked it, and written to the services' audit log")
		},
	}, func(cmd *cobra.Command, args []string) error {
		tf, err := f.read()
		if err != nil {
			return err
		}
		i := slices.IndexFunc(tf.Tokens, func(e auth.TokenEntry) bool { return e.Name == args[0] })
		if i < 0 {
			var names []string
			for _, e := range tf.Tokens {
				names = append(names, e.Name)
			}
			return exit.Usagef("no token named %q in %s (its tokens: %s)", args[0], f.path(), strings.Join(names, ", "))
		}
		if tf.Tokens[i].Name == "seam-services" {
			return exit.Usagef("seam-services is the token the services call each other with; revoking it stops seam up working")
		}
		tf.Tokens = slices.Delete(tf.Tokens, i, i+1)
		tf.Revoked = append(tf.Revoked, auth.RevokedToken{Name: args[0], RevokedBy: operatorName(),
			RevokedAt: time.Now().UTC().Format(time.RFC3339), Reason: strings.TrimSpace(reason)})
		if len(tf.Revoked) > maxRevoked {
			tf.Revoked = tf.Revoked[len(tf.Revoked)-maxRevoked:]
		}
		if err := auth.WriteTokensFile(f.path(), tf); err != nil {
			return exit.Usagef("%w", err)
		}
		if g.JSON() {
			return output.Value(cmd.OutOrStdout(), map[string]any{"revoked": args[0], "tokens_file": f.path()})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "revoked token %s in %s\n", args[0], f.path())
		return nil
	})
}
