package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/workflow"
)

// runInstall installs a node, or continues an installation (root only). Its
// wiring is installRunner.
func (c *cli) runInstall(ctx context.Context, f *installerFlags) error {
	if os.Geteuid() != 0 {
		return errors.New("installing a node requires root; rerun the same command with sudo. Nothing was changed.")
	}
	for _, name := range f.insecure {
		fmt.Fprintf(c.stderr, "Warning: %s uses plain http to a host that is not loopback (--allow-insecure-origin): the node's credentials cross the network unencrypted.\n", name)
	}
	r := c.installRunner(f)
	if len(r.Steps) == 0 {
		return errors.New("install: the installation workflow's steps are not in this build yet. Nothing was changed.")
	}
	_, err := r.Run(ctx)
	return err
}

// installRunner is the installation's wiring, its one place: the
// definition, the steps bound to it, and the journal
// /var/lib/oac-node-install/<id>/install.journal.
func (c *cli) installRunner(f *installerFlags) *workflow.Runner {
	return &workflow.Runner{
		Def:     workflow.InstallDefinition(),
		Steps:   nil, // the installation's steps are not built yet
		Binding: workflow.Binding{Version: workflow.Version, InstallationID: f.installationID},
		Journal: filepath.Join(c.host().JournalDir(f.installationID), workflow.InstallDefinition().Name+".journal"),
	}
}
