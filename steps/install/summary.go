package install

import (
	"context"
	"os"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// summaryStep prints the installation's summary (CONTRACT §6.3).
type summaryStep struct{ d Data }

func (s summaryStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	s.d.Printf("%s", Summary(s.d, os.Getenv("SUDO_UID")))
	return workflow.Result{}, nil
}

// Summary is the text printed when the installation completes. sudoUID is
// $SUDO_UID: a non-root sudo caller gets the commands with sudo.
func Summary(d Data, sudoUID string) string {
	o := d.Options()
	unit := layout.UnitName(o.InstallationID)
	sudo := ""
	if sudoUID != "" && sudoUID != "0" {
		sudo = "sudo "
	}
	prov := "Docker"
	if d.Configuration().Provider == "microsandbox" {
		prov = "microsandbox"
	}
	var b strings.Builder
	line := func(s string) { b.WriteString(s + "\n") }
	line("")
	line("Node installation complete.")
	line("")
	line("Status")
	line("  Core connection: connected")
	line("  Sandbox Provider: " + prov + " (ready)")
	line("")
	line("Node")
	line("  Core: " + o.CoreURL)
	line("  Runs as: " + layout.Account)
	line("  State: " + d.Host().NodeRoot(o.InstallationID))
	line("")
	line("Manage")
	line("  Status: " + sudo + "systemctl status " + unit)
	line("  Logs: " + sudo + "journalctl -u " + unit + " -f")
	line("")
	line("Next")
	line("  Open Nodes in Web: the node is listed there and takes sandboxes now.")
	return strings.TrimRight(b.String(), "\n")
}
