package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

const statusLong = `Show, for every installation on this host (or the one named), the state of
its workflow journals — root's install and uninstall, and the node's prepare,
repair and collect — and of its Runtime generations' leases. An installation
that needs attention is shown with the one thing to run or check next.

Exit codes, for scripts and fleet tools (like systemctl is-active):
  0  every installation is complete and healthy (or there is none)
  1  status itself failed (a bad flag, a file it could not read)
  2  something needs attention: a workflow that is not complete (failed,
     interrupted, in progress or waiting for inspection), a node root that
     cannot be read, or a stuck generation lease`

const statusExample = `  sudo oac-node-install status
  sudo oac-node-install status --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c
  sudo oac-node-install status --json | jq '.installations[] | select(.condition != "ok")'`

func (c *cli) statusCommand() *cobra.Command {
	return c.inspectCommand("status", "Show every installation's workflows and leases, and what needs attention",
		statusLong, statusExample, prefixStatus, c.runStatus)
}

// statusDocument is `status --json` (CONTRACT §10).
type statusDocument struct {
	Format        int                  `json:"format"`
	Installations []installationStatus `json:"installations"`
}

// Installation conditions.
const (
	conditionOK        = "ok"
	conditionAttention = "needs-attention"
)

// installationStatus is one installation: its workflow journals, root's
// first, its node root's leases, and whether it needs attention.
type installationStatus struct {
	InstallationID string `json:"installation_id"`
	// Condition is "ok" or "needs-attention".
	Condition string `json:"condition"`
	// Next is, when the installation needs attention, the one command to run
	// or thing to check next.
	Next      string             `json:"next,omitempty"`
	Workflows []*workflow.Report `json:"workflows"`
	// Node is the node root's leases; absent when the host has no node root
	// for the installation.
	Node *nodeLeases `json:"node,omitempty"`
}

// runStatus prints the state of every installation on the host and ends
// with exit 2 (quietExit) when one of them needs attention.
func (c *cli) runStatus(ctx context.Context, f inspectFlags) error {
	host := c.host()
	byID := map[string]*installationStatus{}
	get := func(id string) *installationStatus {
		s := byID[id]
		if s == nil {
			s = &installationStatus{InstallationID: id, Workflows: []*workflow.Report{}}
			byID[id] = s
		}
		return s
	}
	// Root's journals (install, uninstall) are root's own files.
	paths, err := findJournals(host, f.installationID)
	if err != nil {
		return err
	}
	for _, p := range paths {
		rep, err := workflow.InspectJournal(p, workflow.Lookup)
		if err != nil {
			rep = &workflow.Report{Journal: p, Condition: workflow.NeedsInspection, Note: "cannot read: " + err.Error()}
		}
		normalizeReport(rep)
		s := get(filepath.Base(filepath.Dir(p)))
		s.Workflows = append(s.Workflows, rep)
	}
	// The node roots' journals and leases belong to the service account:
	// read as that account. Each journal is listed once, among the
	// installation's workflows.
	nodes, err := readNodes(ctx, host, inspectRequest{InstallationID: f.installationID, Journals: true, Leases: true}, c.stderr)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		s := get(n.InstallationID)
		s.Workflows = append(s.Workflows, n.Journals...)
		leases := n.nodeLeases
		s.Node = &leases
	}
	doc := statusDocument{Format: jsonFormat, Installations: []installationStatus{}}
	for _, s := range byID {
		s.assess(host)
		doc.Installations = append(doc.Installations, *s)
	}
	sort.Slice(doc.Installations, func(i, j int) bool {
		return doc.Installations[i].InstallationID < doc.Installations[j].InstallationID
	})
	if f.json {
		err = writeJSON(c.stdout, doc)
	} else {
		printStatus(c.stdout, doc.Installations)
	}
	if err != nil {
		return err
	}
	for _, s := range doc.Installations {
		if s.Condition != conditionOK {
			return &quietExit{exitAttention}
		}
	}
	return nil
}

// findJournals lists root's journal files of one or every installation:
// /var/lib/oac-node-install/<id>/*.journal, for canonical ids.
func findJournals(host layout.Host, id string) ([]string, error) {
	ids := "*"
	if id != "" {
		ids = id
	}
	pattern := filepath.Join(host.JournalsRoot(), ids, "*.journal")
	m, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("list journals %s: %w", pattern, err)
	}
	var out []string
	for _, p := range m {
		if validateInstallationID(filepath.Base(filepath.Dir(p))) != nil {
			continue
		}
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// assess sets the installation's condition and its one next step: the
// first of a journal that needs inspection, a failed workflow, an
// unfinished one, an unreadable node root, a stuck lease.
func (s *installationStatus) assess(host layout.Host) {
	s.Condition, s.Next = conditionOK, ""
	for _, cond := range []workflow.Condition{workflow.NeedsInspection, workflow.Failed, workflow.Resumable} {
		for _, r := range s.Workflows {
			if r.Condition == cond {
				s.Condition, s.Next = conditionAttention, workflowNext(host, s.InstallationID, r)
				return
			}
		}
	}
	if n := s.Node; n != nil {
		if n.Error != "" {
			s.Condition, s.Next = conditionAttention, "check the node root "+n.NodeRoot+": "+n.Error
			return
		}
		for _, g := range n.Generations {
			if len(g.Next) > 0 {
				s.Condition, s.Next = conditionAttention, g.Next[0]
				return
			}
		}
	}
}

// workflowNext is what to do about a workflow journal that is not complete.
func workflowNext(host layout.Host, id string, r *workflow.Report) string {
	if r.Condition == workflow.NeedsInspection {
		return "inspect " + r.Journal + ": " + r.Note
	}
	switch r.Workflow {
	case workflow.InstallDefinition().Name:
		return "rerun the install command Web generated for this node: it continues where it stopped"
	case workflow.UninstallDefinition().Name:
		return "sudo oac-node-install --uninstall --installation-id " + id
	case workflow.PrepareDefinition().Name, workflow.RepairDefinition().Name, workflow.CollectDefinition().Name:
		if b := r.Binding; b != nil {
			helper := layout.Node{Root: host.NodeRoot(id)}.Helper()
			return fmt.Sprintf("the node retries it; to run it now: sudo -u %s %s --generation-action %s --generation %d --specification-digest %s --installation-id %s",
				layout.Account, helper, r.Workflow, b.Generation, b.SpecificationDigest, id)
		}
	}
	return "rerun the command that wrote " + r.Journal
}

// printStatus prints the installations as text; every value read from a
// journal or from the node root passes field.
func printStatus(w io.Writer, insts []installationStatus) {
	if len(insts) == 0 {
		fmt.Fprintln(w, "No installation on this host.")
		return
	}
	for i, s := range insts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		cond := "ok"
		if s.Condition != conditionOK {
			cond = "needs attention"
		}
		fmt.Fprintf(w, "installation %s: %s\n", field(s.InstallationID), cond)
		if s.Next != "" {
			fmt.Fprintf(w, "  next:          %s\n", field(s.Next))
		}
		for _, r := range s.Workflows {
			fmt.Fprintln(w)
			printReport(w, r)
		}
		if n := s.Node; n != nil && (len(n.Generations) > 0 || n.Error != "") {
			fmt.Fprintln(w)
			printNode(w, *n)
		}
	}
}

func printReport(w io.Writer, r *workflow.Report) {
	name := r.Workflow
	if name == "" {
		name = "(unknown)"
	}
	fmt.Fprintf(w, "  %s: %s\n", field(name), field(string(r.Condition)))
	if b := r.Binding; b != nil {
		if b.Generation != 0 {
			fmt.Fprintf(w, "    generation:    %d (specification %s)\n", b.Generation, field(short(b.SpecificationDigest)))
		}
		fmt.Fprintf(w, "    written by:    oac-node-install %s\n", field(b.Version))
	}
	if r.State != "" {
		fmt.Fprintf(w, "    state:         %s\n", field(string(r.State)))
	}
	var steps []string
	for _, c := range r.Completed {
		s := field(c.Step)
		if c.Attempts > 1 {
			s += fmt.Sprintf(" (%d attempts)", c.Attempts)
		}
		steps = append(steps, s)
	}
	if len(steps) > 0 {
		fmt.Fprintf(w, "    completed:     %s\n", strings.Join(steps, ", "))
	}
	if p := r.Pending; p != nil {
		how := "interrupted"
		if p.Failed {
			how = "failed"
		}
		fmt.Fprintf(w, "    pending:       %s (%s, policy %s, attempt %d, began %s)\n", field(p.Step), how, field(r.Policy), p.Attempt, stamp(p.Began))
	}
	if e := r.LastError; e != nil {
		fmt.Fprintf(w, "    last error:    %s: %s [%s] at %s\n", field(e.Step), field(e.Error), field(e.Class), stamp(e.Time))
	}
	if !r.Updated.IsZero() {
		fmt.Fprintf(w, "    updated:       %s\n", stamp(r.Updated))
	}
	if r.Note != "" {
		fmt.Fprintf(w, "    note:          %s\n", field(r.Note))
	}
	if t := r.TornTail; t != nil {
		fmt.Fprintf(w, "    torn tail:     %s\n", field(t.String()))
	}
	if t := r.LastCut; t != nil {
		fmt.Fprintf(w, "    last cut:      %s\n", field(t.String()))
	}
	fmt.Fprintf(w, "    journal:       %s\n", field(r.Journal))
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
