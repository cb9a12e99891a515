package install

import (
	"context"
	"os"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// summaryStep prints the installation's summary (CONTRACT §6.3).
type summaryStep struct{ d Data }

func (s summaryStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	s.d.Printf("%s", StyledSummary(s.d, os.Getenv("SUDO_UID"), s.d.SummaryStyle()))
	return workflow.Result{}, nil
}

// SummaryStyle marks up the summary for a terminal: Title wraps the
// "Node installation complete." line, Heading each heading. Nil functions
// leave the text plain.
type SummaryStyle struct {
	Title, Heading func(string) string
}

func (st SummaryStyle) title(s string) string {
	if st.Title == nil {
		return s
	}
	return st.Title(s)
}

func (st SummaryStyle) heading(s string) string {
	if st.Heading == nil {
		return s
	}
	return st.Heading(s)
}

// Summary is the text printed when the installation completes. sudoUID is
// $SUDO_UID: a non-root sudo caller gets the commands with sudo.
func Summary(d Data, sudoUID string) string { return StyledSummary(d, sudoUID, SummaryStyle{}) }

// StyledSummary is Summary marked up with st.
func StyledSummary(d Data, sudoUID string, st SummaryStyle) string {
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
	line(st.title("Node installation complete."))
	line("")
	line(st.heading("Status"))
	line("  Core connection: connected")
	line("  Sandbox Provider: " + prov + " (ready)")
	line("")
	line(st.heading("Node"))
	line("  Core: " + o.CoreURL)
	line("  Runs as: " + layout.Account)
	line("  State: " + d.Host().NodeRoot(o.InstallationID))
	line("")
	line(st.heading("Manage"))
	line("  Status: " + sudo + "systemctl status " + unit)
	line("  Logs: " + sudo + "journalctl -u " + unit + " -f")
	line("")
	line(st.heading("Next"))
	line("  Open Nodes in Web: the node is listed there and takes sandboxes now.")
	return strings.TrimRight(b.String(), "\n")
}
