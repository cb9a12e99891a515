package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/uninstall"
	"github.com/openagentcore/oac-node-install/workflow"
)

// runUninstall removes a node (root only): steps/uninstall's Run with the
// real adapters, its service-account steps in a child of this binary
// (asaccount.Children), the journal
// /var/lib/oac-node-install/<id>/uninstall.journal.
func (c *cli) runUninstall(ctx context.Context, f *installerFlags) error {
	if os.Geteuid() != 0 {
		return workflow.Refuse(errors.New("uninstalling a node requires root; rerun the same command with sudo"))
	}
	c.record("uninstall", f.installationID.String())
	bin, err := privsep.Capture()
	if err != nil {
		return err
	}
	defer bin.Close()
	sd, err := dialSystemdManager(ctx)
	if err != nil {
		return err
	}
	defer sd.Close()
	h := c.host()
	// The child's progress lines (kept networks and stores, with their
	// removal commands) are the operator's: without a Progress, Children
	// prints them to Output.
	child := asaccount.NewChildren(privsep.Options{Binary: bin, Home: h.Home(), Output: c.progress(), Signals: childSignals},
		accounts.Under(h.Root))
	rep, err := uninstall.Run(ctx, uninstall.Command{
		Options: uninstall.Options{InstallationID: f.installationID, Force: f.force},
		Host:    h, Accounts: accounts.Commands{}, Systemd: sd,
		Child: child.Run, EndChild: child.Close,
		Running: uninstall.ProcRunning("/proc"), Version: workflow.Version, Out: c.progress(),
	})
	c.result.ran(rep)
	return err
}

const uninstallLong = `Remove the node of one installation from this host: the same as
oac-node-install --uninstall, with the same flags, output and exit codes.
Core must confirm it no longer lists the node, or --force removes it anyway.
Every refusal that changes nothing ends with "Nothing was changed."`

const uninstallExample = `  sudo oac-node-install uninstall --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c`

// annotationChanging marks a subcommand that changes the host: its
// refusals say "Nothing was changed.".
const annotationChanging = "changes-host"

// uninstallCommand is `oac-node-install uninstall`, the root command's
// --uninstall as a command: the flags --uninstall accepts, the same run.
func (c *cli) uninstallCommand() *cobra.Command {
	f := &installerFlags{}
	cmd := &cobra.Command{
		Use:     "uninstall",
		Short:   "Remove the node (the same as --uninstall)",
		Long:    uninstallLong,
		Example: uninstallExample,
		Args:    noArgs,
		Annotations: map[string]string{annotationPrefix: prefixUninstall,
			annotationChanging: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.uninstall = true
			if f.json {
				c.result = newResultDocument(modeUninstall.action())
			}
			if err := f.validate(cmd.Flags()); err != nil {
				return err
			}
			if c.result != nil {
				c.result.InstallationID = f.installationID
			}
			mode := modeUninstall
			c.mode = &mode
			if f.noColor {
				os.Setenv("NO_COLOR", "1")
			}
			return c.runUninstall(cmd.Context(), f)
		},
	}
	cmd.Flags().SortFlags = false
	all := pflag.NewFlagSet("", pflag.ContinueOnError)
	f.bind(all)
	for _, name := range allowedIn[modeUninstall] {
		if name == flagUninstall {
			continue
		}
		fl := *all.Lookup(name)
		fl.Usage = strings.TrimPrefix(fl.Usage, "with --uninstall: ")
		fl.Usage = strings.TrimPrefix(fl.Usage, "install and --uninstall: ")
		cmd.Flags().AddFlag(&fl)
	}
	c.bindHostRoot(cmd.Flags())
	return cmd
}
