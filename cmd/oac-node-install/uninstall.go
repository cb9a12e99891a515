package main

import (
	"context"
	"errors"
	"os"

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
