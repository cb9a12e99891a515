package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/status"
)

const statusLong = `Show, for every installation on this host (or the one named), the state of
its workflow journals — root's install and uninstall, and the node's prepare,
repair and collect, each "running" while a live process holds its lock —
its unit as systemd reports it, its registration and Core's view of it (read
as the service account, at most 5 s), what the installer's bookkeeping
records, and its Runtime generations' leases. An installation that needs
attention is shown with the one thing to run or check next. status changes
nothing; systemd or Core that cannot be reached are shown, and are no reason
for attention by themselves.

Exit codes, for scripts and fleet tools (like systemctl is-active):
  0  every installation is complete and healthy, or running (or there is none)
  1  status itself failed (not run as root, a bad flag, a file it could not
     read), or the installation named with --installation-id is not known
     on this host
  2  something needs attention: a workflow that is not complete (failed,
     interrupted or waiting for inspection), a node root that cannot be
     read, a stuck generation lease, or an installed node whose
     registration, unit or Core connection is not healthy (removed in Core,
     not connected, provider not ready)`

const statusExample = `  sudo oac-node-install status
  sudo oac-node-install status --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c
  sudo oac-node-install status --json | jq '.installations[] | select(.condition != "ok")'`

func (c *cli) statusCommand() *cobra.Command {
	return c.inspectCommand("status", "Show every installation's workflows and leases, and what needs attention",
		statusLong, statusExample, prefixStatus, c.runStatus)
}

// runStatus prints the state of every installation on the host
// (status.Gather) and ends with exit 2 (quietExit) when one of them needs
// attention, or fails (exit 1) when the installation it was asked about is
// not known on this host.
func (c *cli) runStatus(ctx context.Context, f inspectFlags) error {
	doc, err := status.Gather(ctx, c.inspectOptions(f))
	if err != nil {
		return err
	}
	if f.installationID != "" && len(doc.Installations) == 0 {
		// A probe of a node that does not exist must not pass: the
		// question named nothing there is, so status fails (exit 1); 2
		// would send the operator to a next command there is none of.
		if f.json {
			if err := writeJSON(c.stdout, doc); err != nil {
				return err
			}
		}
		return fmt.Errorf("installation %s is not known on this host; `sudo oac-node-install status` lists every installation", f.installationID)
	}
	if f.json {
		err = writeJSON(c.stdout, doc)
	} else {
		printStatus(c.stdout, doc.Installations)
		if cmd := doc.Command; cmd != nil && len(doc.Installations) > 0 {
			fmt.Fprintf(c.stdout, "\ncommand on this host: %s (oac-node-install %s, written %s)\n", field(cmd.Path), field(cmd.Version), stamp(cmd.Written))
		}
		if kept, _ := safefile.Exists(runsPath(c.host())); kept || len(doc.Installations) > 0 {
			fmt.Fprintf(c.stdout, "\n%s\n", runLogLine(c.host()))
		}
	}
	if err != nil {
		return err
	}
	if doc.NeedsAttention() {
		return &quietExit{exitAttention}
	}
	return nil
}
