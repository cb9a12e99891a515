package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/workflow"
)

// runUninstall removes a node (root only). Its wiring is uninstallRunner.
func (c *cli) runUninstall(ctx context.Context, f *installerFlags) error {
	if os.Geteuid() != 0 {
		return errors.New("uninstalling a node requires root; rerun the same command with sudo. Nothing was changed.")
	}
	r := c.uninstallRunner(f)
	if len(r.Steps) == 0 {
		return errors.New("uninstall: the uninstall workflow's steps are not in this build yet. Nothing was changed.")
	}
	_, err := r.Run(ctx)
	return err
}

// uninstallRunner is the uninstall's wiring, its one place: the definition,
// the steps bound to it (--force among their options), and the journal
// /var/lib/oac-node-install/<id>/uninstall.journal.
func (c *cli) uninstallRunner(f *installerFlags) *workflow.Runner {
	return &workflow.Runner{
		Def:     workflow.UninstallDefinition(),
		Steps:   nil, // the uninstall's steps are not built yet
		Binding: workflow.Binding{Version: workflow.Version, InstallationID: f.installationID},
		Journal: filepath.Join(c.host().JournalDir(f.installationID), workflow.UninstallDefinition().Name+".journal"),
	}
}
