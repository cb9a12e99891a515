package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagSuggestions are the flags, among those valid flags lists, that a
// misspelt name probably meant: within an edit distance of two (case
// ignored), or beginning with what was typed. cobra suggests commands, never
// flags.
func flagSuggestions(typed string, valid []string) []string {
	typed = strings.ToLower(typed)
	if typed == "" {
		return nil
	}
	var out []string
	for _, name := range valid {
		if editDistance(typed, name) <= 2 || (len(typed) >= 2 && strings.HasPrefix(name, typed)) {
			out = append(out, "--"+name)
		}
	}
	return out
}

// validFlags are the flag names a command line may use: for the root
// command, those of the mode the arguments ask for (--uninstall's flags
// after --uninstall, and --uninstall itself without it); for a subcommand, its own and the inherited ones.
// Hidden flags are left out unless the mode takes them (the generation
// helper's).
func (c *cli) validFlags(cmd *cobra.Command) []string {
	if !cmd.HasParent() {
		mode := modeFromArgs(c.args)
		if mode == modeInstall {
			return append([]string{flagUninstall}, allowedIn[mode]...)
		}
		return allowedIn[mode]
	}
	var names []string
	add := func(fl *pflag.Flag) {
		if !fl.Hidden {
			names = append(names, fl.Name)
		}
	}
	cmd.LocalFlags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	return names
}

// editDistance is the Levenshtein distance of a and b, byte by byte.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
