package main

import (
	"io"
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

// bashWithoutPackage makes cobra's bash completion work where the
// bash-completion package is not loaded: the script calls three of the
// package's functions (_get_comp_words_by_ref when _init_completion is
// missing, and _filedir for file and directory values), which a bare bash
// lacks ("_get_comp_words_by_ref: command not found" on every TAB). Each
// call goes instead to a function of the script's own that uses the
// package's when it is there and does the minimum itself when not.
func bashWithoutPackage(script, name string) string {
	script = strings.Replace(script, `_get_comp_words_by_ref "$@" cur prev words cword`,
		"__"+name+`_get_comp_words_by_ref "$@"`, 1)
	script = strings.ReplaceAll(script, "_filedir", "__"+name+"_filedir")
	head, rest, _ := strings.Cut(script, "\n")
	return head + "\n" + strings.ReplaceAll(bashFallbacks, "NAME", name) + rest
}

// bashFallbacks are the script's stand-ins for the bash-completion
// package's functions; NAME is the command's name.
const bashFallbacks = `
# Stand-ins for the bash-completion package's functions, used only when the
# package is not loaded: completion works in a bare bash too.
__NAME_get_comp_words_by_ref()
{
    if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        _get_comp_words_by_ref "$@" cur prev words cword
        return
    fi
    # Join what bash split at '=' and ':' (COMP_WORDBREAKS) back into
    # one word, as _get_comp_words_by_ref -n =: does.
    local i w joined=0
    words=()
    cword=0
    for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
        w=${COMP_WORDS[i]}
        if ((i > 0)) && [[ $w == "=" || $w == ":" || $joined == 1 ]]; then
            words[${#words[@]}-1]+=$w
            [[ $w == "=" || $w == ":" ]] && joined=1 || joined=0
        else
            words+=("$w")
            joined=0
        fi
        ((i == COMP_CWORD)) && cword=$((${#words[@]} - 1))
    done
    cur=${words[cword]-}
    prev=${words[cword-1]-}
}

__NAME_filedir()
{
    if declare -F _filedir >/dev/null 2>&1; then
        _filedir "$@"
        return
    fi
    local IFS=$'\n'
    if [[ ${1-} == -d ]]; then
        COMPREPLY=($(compgen -d -- "${cur-}"))
    else
        COMPREPLY=($(compgen -f -- "${cur-}"))
    fi
    compopt -o filenames 2>/dev/null
}
`

// completionWithoutPackage replaces the run of cobra's `completion bash`
// with one printing bashWithoutPackage's script, and drops from its help
// the bash-completion package it no longer needs.
func (c *cli) completionWithoutPackage(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	comp, _, err := root.Find([]string{"completion", "bash"})
	if err != nil || comp.Name() != "bash" {
		return
	}
	comp.Long = strings.Replace(comp.Long, "This script depends on the 'bash-completion' package.\nIf it is not installed already, you can install it via your OS's package manager.\n\n", "", 1)
	comp.RunE = func(cmd *cobra.Command, _ []string) error {
		noDesc, _ := cmd.Flags().GetBool("no-descriptions")
		var buf strings.Builder
		if err := cmd.Root().GenBashCompletionV2(&buf, !noDesc); err != nil {
			return err
		}
		_, err := io.WriteString(c.stdout, bashWithoutPackage(buf.String(), cmd.Root().Name()))
		return err
	}
}
