package cli_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seamdata/seam/cmd/seam/internal/cli"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

var mentionedFlag = regexp.MustCompile(`(?:^|[\s(\[|])--([a-z][a-z0-9-]*)`)

// hasFlag reports whether cmd, or (for a group) any command under it,
// takes --name.
func hasFlag(cmd *cobra.Command, name string) bool {
	if cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil || cmd.PersistentFlags().Lookup(name) != nil {
		return true
	}
	for _, c := range cmd.Commands() {
		if hasFlag(c, name) {
			return true
		}
	}
	return false
}

// named returns the command a command line in help text runs ("seam gate
// ingest … --partition"), given the text before a flag, or nil when the
// flag is not part of such a command line.
func named(root *cobra.Command, before string) *cobra.Command {
	i := strings.LastIndex(before, "seam ")
	if i < 0 || strings.ContainsAny(before[i:], "'`") || strings.Contains(before[i:], ". ") {
		return nil
	}
	cmd, _, err := root.Find(strings.Fields(before[i+len("seam "):]))
	if err != nil || cmd == root {
		return nil
	}
	return cmd
}

// Every command's help renders, and says only true things: no flag usage
// turns a quoted word into a bogus placeholder (the old "--data-dir seam
// up"), every --flag the text mentions exists where it says, serving
// commands list no client flag, and every command has a summary and
// runnable ones an example.
func TestEveryCommandsHelp(t *testing.T) {
	t.Parallel()
	root := cli.NewRoot(nil, "v1.2.3")
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		path := strings.Fields(cmd.CommandPath())[1:]
		out, errOut, code := seamtest.Run(context.Background(), append(path, "--help")...)
		if code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("seam %s --help: exit %d, stderr %q, output:\n%s", strings.Join(path, " "), code, errOut, out)
		}
		if cmd.Short == "" {
			t.Errorf("%s has no summary", cmd.CommandPath())
		}
		if cmd.Runnable() && !cmd.HasSubCommands() && cmd.Example == "" {
			t.Errorf("%s has no example", cmd.CommandPath())
		}
		all := pflag.NewFlagSet("", pflag.ContinueOnError)
		all.AddFlagSet(cmd.Flags())
		all.AddFlagSet(cmd.InheritedFlags())
		all.VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: usage %q has a back-quoted word, which pflag shows as the value's name", cmd.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, line := range strings.Split(cmd.Long+"\n"+cmd.Example, "\n") {
			for _, m := range mentionedFlag.FindAllStringSubmatchIndex(line, -1) {
				name := line[m[2]:m[3]]
				target := cmd
				if c := named(root, line[:m[0]]); c != nil {
					target = c
				}
				if !hasFlag(target, name) {
					t.Errorf("%s help mentions --%s, which %s does not take: %q", cmd.CommandPath(), name, target.CommandPath(), strings.TrimSpace(line))
				}
			}
		}
		if cmd.Name() == "up" || cmd.Name() == "serve" || cmd.Name() == "migrate" {
			for _, f := range []string{"addr", "token", "timeout", "tls"} {
				if all.Lookup(f) != nil {
					t.Errorf("%s takes the client flag --%s", cmd.CommandPath(), f)
				}
			}
		}
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				walk(c)
			}
		}
	}
	walk(root)

	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, _, code := seamtest.Run(context.Background(), args...)
		if code != 0 || !strings.HasPrefix(out, "seam ") {
			t.Errorf("seam %s: exit %d, %q; want the version", args[0], code, out)
		}
	}
}
