package main

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpCommand is `oac-node-install help [command]`: cobra's help command,
// except that a topic that names no command fails (exit 1, "unknown help
// topic", with cobra's suggestion) instead of printing the root's help with
// exit 0.
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long: `Help provides help for any command in the application.
Simply type oac-node-install help [path to command] for full details.`,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var completions []cobra.Completion
			for _, sub := range cmd.Commands() {
				if (sub.IsAvailableCommand() || sub == c) && strings.HasPrefix(sub.Name(), toComplete) {
					completions = append(completions, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return completions, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				msg := fmt.Sprintf("unknown help topic %q", strings.Join(args, " "))
				if len(rest) > 0 && cmd != nil {
					if s := cmd.SuggestionsFor(rest[0]); len(s) > 0 {
						msg += "; did you mean " + cmd.Root().Name() + " help " + strings.Join(s, " or ") + "?"
					}
				}
				return usagef("%s", msg)
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// flagError is the root's flag errors as usage errors. A flag unknown to
// the command but known to a subcommand (`oac-node-install --json status`)
// names the subcommands it belongs to, the one the command line names
// first, and where the flag goes; it is no installation's failure. Any
// other unknown long flag is refused with the flags valid there that it
// probably meant (flagSuggestions).
func (c *cli) flagError(cmd *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedName() == "" || ne.GetSpecifiedShortnames() != "" {
		return usagef("%v", err)
	}
	name := ne.GetSpecifiedName()
	if cmd.HasParent() {
		return c.unknownFlag(cmd, err, name)
	}
	var owners []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() && sub.Flags().Lookup(name) != nil {
			owners = append(owners, sub.Name())
		}
	}
	if len(owners) == 0 {
		return c.unknownFlag(cmd, err, name)
	}
	named := func(sub string) bool { return slices.Contains(c.args, sub) }
	sort.SliceStable(owners, func(i, j int) bool { return named(owners[i]) && !named(owners[j]) })
	list := owners[0]
	if n := len(owners); n > 1 {
		list = strings.Join(owners[:n-1], ", ") + " and " + owners[n-1]
	}
	return &usageError{msg: fmt.Sprintf("%v (it is a flag of %s: %s %s --%s)", err, list, cmd.Name(), owners[0], name), notInstall: true}
}

// unknownFlag is the refusal of an unknown flag name, with the valid flags
// it probably meant.
func (c *cli) unknownFlag(cmd *cobra.Command, err error, name string) error {
	s := flagSuggestions(name, c.validFlags(cmd))
	if len(s) == 0 {
		return usagef("%v", err)
	}
	return usagef("%v (did you mean %s?)", err, strings.Join(s, " or "))
}
