package install

import (
	"context"
	"os"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Titles of the summary: a run that installed or changed the node, and a
// rerun that found every step satisfied and wrote nothing (k3s's "No
// change detected").
const (
	CompleteTitle  = "Node installation complete."
	UnchangedTitle = "No change: the node is installed, registered and running."
)

// summaryStep prints the installation's summary (CONTRACT §6.3); unchanged
// titles it for a rerun that changed nothing.
type summaryStep struct {
	d         Data
	unchanged bool
}

func (s summaryStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	title := CompleteTitle
	if s.unchanged {
		title = UnchangedTitle
	}
	s.d.Printf("%s", styledSummary(s.d, os.Getenv("SUDO_UID"), s.d.SummaryStyle(), title))
	return workflow.Result{}, nil
}

// SummaryStyle marks up the summary for a terminal: Title wraps the
// title line ("Node installation complete." or the unchanged rerun's), Heading each heading. Nil functions
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
	return styledSummary(d, sudoUID, st, CompleteTitle)
}

// styledSummary is the summary under title.
func styledSummary(d Data, sudoUID string, st SummaryStyle, title string) string {
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
	line(st.title(title))
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
	// The command on the host (CONTRACT §10): every node's workflows.
	line("  Installer: " + sudo + "oac-node-install status")
	line("")
	line(st.heading("Next"))
	// The platform's words (CONTRACT §6.3): the installation asked no
	// model anything.
	line("  Open Nodes in Web to manage this host: the node is listed there and takes sandboxes")
	line("  now. No model request was made.")
	return strings.TrimRight(b.String(), "\n")
}

func (s summaryStep) Check(context.Context, workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	return done, workflow.Result{}, nil
}
