package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
)

// nearest returns the candidate closest to typed, or "" when none is
// close enough to be what was meant. Closeness is the edit distance
// (insertions, deletions, substitutions and swaps of two neighbours, each
// one edit; case ignored), and a candidate that typed begins counts as one
// edit away, so `lst` finds `list` before `get` and `reg` finds
// `register`. Any other candidate is close enough at two edits, and at
// fewer than typed has letters (`ab` is not a typo of `up`). Ties go to
// the earlier candidate.
func nearest(typed string, candidates []string) string {
	typed = strings.ToLower(typed)
	best, bestDist := "", 0
	for _, c := range candidates {
		d := editDistance(typed, strings.ToLower(c))
		switch {
		case typed != "" && strings.HasPrefix(strings.ToLower(c), typed):
			d = min(d, 1)
		case d > 2 || d >= len([]rune(typed)):
			continue
		}
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b: the
// Levenshtein distance with a swap of two neighbouring letters counted as
// one edit, the commonest typo.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// suggestCommand returns the subcommand of cmd nearest to typed, by name
// or alias, or "".
func suggestCommand(cmd *cobra.Command, typed string) string {
	var names []string
	owner := map[string]string{}
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		for _, n := range append([]string{c.Name()}, c.Aliases...) {
			names = append(names, n)
			owner[n] = c.Name()
		}
		for _, s := range c.SuggestFor {
			if strings.EqualFold(s, typed) {
				return c.Name()
			}
		}
	}
	return owner[nearest(typed, names)]
}

// flagError is the error of a command line whose flags do not parse: a
// usage error (exit 2) that, for an unknown flag, names the nearest flag
// the command has.
func flagError(cmd *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) {
		if s := suggestFlag(cmd.Flags(), unknown); s != "" {
			return exit.Usagef("%w; did you mean %s? (see %s --help)", err, s, cmd.CommandPath())
		}
	}
	return exit.Usagef("%w (see %s --help)", err, cmd.CommandPath())
}

// suggestFlag returns the flag of fs nearest to the unknown one, written
// as it would be typed (`--data-dir`), or "". A group of shorthands that
// spells a long flag (`-addr`) gets that flag with its two dashes.
func suggestFlag(fs *pflag.FlagSet, unknown *pflag.NotExistError) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	typed := unknown.GetSpecifiedName()
	if group := unknown.GetSpecifiedShortnames(); group != "" {
		// -addr is read as the shorthands a, d, d, r: the long flag meant
		// is the whole group.
		typed, _, _ = strings.Cut(group, "=")
		if len(typed) < 2 {
			return ""
		}
	}
	if n := nearest(typed, names); n != "" {
		return fmt.Sprintf("--%s", n)
	}
	return ""
}
