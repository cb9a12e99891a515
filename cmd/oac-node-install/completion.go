package main

import (
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// completeValues registers, on cmd and every command under it, the
// completion of the flags whose values are known: --provider the two
// providers, --installation-id the installations this host records,
// --bundle directories, --generation-action its three actions. The other
// values are the shell's file names (--core-ca) or nothing.
func (c *cli) completeValues(cmd *cobra.Command) {
	values := map[string]cobra.CompletionFunc{
		flagProvider:         cobra.FixedCompletions([]cobra.Completion{release.ProviderDocker, release.ProviderMicrosandbox}, cobra.ShellCompDirectiveNoFileComp),
		flagGenerationAction: cobra.FixedCompletions([]cobra.Completion{"prepare", "repair", "collect"}, cobra.ShellCompDirectiveNoFileComp),
		flagInstallationID: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return c.installationIDs(), cobra.ShellCompDirectiveNoFileComp
		},
		flagBundle: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
	}
	for _, sub := range append([]*cobra.Command{cmd}, cmd.Commands()...) {
		for name, fn := range values {
			if sub.Flags().Lookup(name) != nil {
				sub.RegisterFlagCompletionFunc(name, fn)
			}
		}
	}
}

// installationIDs are the installations this host records: the host
// records in /etc/oac-node and the journal directories, as far as the
// user completing may list them (root's directories are readable by all).
// Names that are not canonical UUIDs are left out.
func (c *cli) installationIDs() []cobra.Completion {
	h := c.host()
	var ids []string
	if entries, err := os.ReadDir(h.EtcDir()); err == nil {
		for _, e := range entries {
			if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && e.Type().IsRegular() {
				ids = append(ids, id)
			}
		}
	}
	if entries, err := os.ReadDir(h.JournalsRoot()); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				ids = append(ids, e.Name())
			}
		}
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return !ident.CanonicalUUID(id) })
	slices.Sort(ids)
	return slices.Compact(ids)
}

// completingUninstall narrows the root command's flag names to those an
// uninstall accepts (CONTRACT §10) when the command line being completed
// holds --uninstall: cobra completes the names of the flags not hidden.
func completingUninstall(root *cobra.Command, args []string) {
	if len(args) == 0 || args[0] != cobra.ShellCompRequestCmd || !slices.Contains(args[1:], "--"+flagUninstall) {
		return
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			return // a subcommand's line: its own flags
		}
	}
	allowed := append([]string{flagHostRoot}, allowedIn[modeUninstall]...)
	root.Flags().VisitAll(func(fl *pflag.Flag) {
		if !slices.Contains(allowed, fl.Name) {
			fl.Hidden = true
		}
	})
}
